//! # sluice-agent: the OpenFlow 1.3 controller channel
//!
//! ## What
//! Everything between the switch and its controllers: passive listeners
//! (`ptcp:PORT[:IP]`, `pssl:PORT[:IP]`, so `ovs-ofctl -O OpenFlow13 CMD
//! tcp:IP:PORT` works, and `punix:PATH`, the local control socket that
//! `sluice ctl` finds by itself; see [`unix`] for how its file is created
//! and removed) and active connections (`tcp:IP:PORT`,
//! `ssl:IP:PORT`) to one or many controllers; HELLO / version negotiation;
//! echo and the inactivity probe; reconnect with bounded exponential
//! backoff; roles and generation ids; SLAVE write rejection; per-connection
//! asynchronous-message filters (SET_ASYNC / GET_ASYNC); multipart request
//! reassembly and reply splitting; flow control; fail-mode state.
//!
//! ## Basic design
//! ```text
//!  listener / connector tasks ──spawn──> connection task (one per peer)
//!        socket reads ──parsed messages──> core task ──> Switch::handle
//!        socket writes <──bounded queue── core task <── Switch::take_async
//!                                              ^── AsyncNotifier::notify (datapath)
//! ```
//! - A **connection task** (module `conn`) owns the socket: HELLO, framing,
//!   inactivity probe, reading and writing. It knows nothing of roles, nor
//!   of the transport: a unix-socket connection runs exactly the code a
//!   TCP or TLS one does.
//! - The **core** (module `core`) is one task that owns the [`Switch`], the
//!   [`roles::Roles`] and each connection's async filters, reassembler and
//!   packet-in token bucket. Because one task handles every message in
//!   arrival order and is the only producer into each outbound queue,
//!   replies leave in request order and a BARRIER_REPLY follows everything
//!   before it (including the asynchronous messages those caused).
//! - The core never waits for a controller: it `try_send`s into bounded
//!   queues. Over-limit or queue-full PACKET_INs are dropped and counted;
//!   any other message that does not fit disconnects that controller (and
//!   is logged). The datapath never waits for the agent: it queues
//!   asynchronous messages inside its [`Switch`] (for worker threads:
//!   [`async_queue`]) and calls [`AsyncNotifier::notify`].
//!
//! ## Fail mode
//! [`Agent::controllers_connected`] counts connections that count as
//! controllers (active targets always; passive ones only with
//! [`AgentConfig::passive_counts_as_controller`]). [`AgentEvent`]s announce
//! the first controller connecting and the last one leaving, with the
//! configured [`FailMode`]; the daemon implements what the mode means.
//!
//! ## Invariants
//! - No panics on peer input; every read is bounded by the 16-bit message
//!   length; every queue is bounded; every loop ends on shutdown.
//! - Unknown message types reach the switch, which answers
//!   `OFPBRC_BAD_TYPE`; undecodable messages are answered with the decode
//!   error, in order.
//! - TLS always verifies the peer in both directions ([`tls`]).

pub mod config;
mod conn;
mod core;
pub mod roles;
pub mod switch;
pub mod tls;
pub mod unix;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::{broadcast, mpsc, watch, Notify, Semaphore};
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};

pub use config::{AgentConfig, Endpoint, FailMode, RateLimit, Target, TlsFiles, Transport};
pub use roles::ConnId;
pub use switch::{async_queue, AsyncQueue, AsyncSender, Switch};
pub use tls::{TlsContext, TlsError};

/// Something the daemon may want to react to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentEvent {
    /// A connection finished its HELLO exchange.
    Connected {
        conn: ConnId,
        peer: Endpoint,
        target: Target,
    },
    Disconnected {
        conn: ConnId,
        peer: Endpoint,
        reason: String,
    },
    /// The number of controllers went from 0 to 1: leave fail mode.
    FirstControllerConnected,
    /// The last controller disconnected: the switch is now in `fail_mode`.
    AllControllersLost {
        fail_mode: FailMode,
    },
}

/// Agent-wide counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub packet_in_frames: AtomicU64,
    pub packet_in_sent: AtomicU64,
    pub packet_in_dropped_rate: AtomicU64,
    pub packet_in_dropped_queue: AtomicU64,
    pub packet_in_unsent: AtomicU64,
    pub overflow_disconnects: AtomicU64,
    pub probe_timeouts: AtomicU64,
    pub connect_attempts: AtomicU64,
}

/// A snapshot of the agent-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AgentStats {
    /// PACKET_INs the switch made, one per frame however many connections
    /// it then went to (or none): the frames sent to the controller.
    pub packet_in_frames: u64,
    /// PACKET_IN messages queued on connections (one frame may count on
    /// several).
    pub packet_in_sent: u64,
    /// PACKET_INs refused by a connection's token bucket.
    pub packet_in_dropped_rate: u64,
    /// PACKET_INs that found a connection's outbound queue full.
    pub packet_in_dropped_queue: u64,
    /// PACKET_INs lost for no rate or queue reason: no connection wanted
    /// it (no controller connected, or none asked for the reason), its
    /// connection closed as it was queued, or it could not be encoded.
    /// With one controller every PACKET_IN is sent, dropped by rate or
    /// queue, or counted here.
    pub packet_in_unsent: u64,
    /// Connections closed because a non-droppable message did not fit.
    pub overflow_disconnects: u64,
    /// Connections closed by the inactivity probe.
    pub probe_timeouts: u64,
    /// TCP connection attempts to active targets.
    pub connect_attempts: u64,
}

/// Per-connection counters.
#[derive(Debug, Default)]
pub struct ConnCounters {
    pub packet_in_sent: AtomicU64,
    pub packet_in_dropped_rate: AtomicU64,
    pub packet_in_dropped_queue: AtomicU64,
}

/// One live connection, as [`Agent::connections`] reports it.
#[derive(Clone, Debug)]
pub struct ConnStatus {
    pub id: ConnId,
    pub peer: Endpoint,
    /// The target it came from (the listener for passive connections).
    pub target: Target,
    /// Whether it counts as a controller for the fail mode.
    pub controller: bool,
    /// `controller_role` value.
    pub role: u32,
    pub counters: Arc<ConnCounters>,
}

/// State shared by the agent handle, the core and the connection tasks.
pub(crate) struct Shared {
    pub counters: Counters,
    status: Mutex<BTreeMap<ConnId, ConnStatus>>,
    pub controllers: watch::Sender<usize>,
    pub events: broadcast::Sender<AgentEvent>,
    /// Set by [`AsyncNotifier::notify`]; wakes the core.
    pub wake: AsyncNotifier,
    pub next_id: AtomicU64,
    /// The targets running now (changed by [`Agent::add_target`] and
    /// [`Agent::remove_target`]).
    targets: Mutex<Vec<Target>>,
}

impl Shared {
    pub(crate) fn status_mut(&self) -> MutexGuard<'_, BTreeMap<ConnId, ConnStatus>> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn targets_mut(&self) -> MutexGuard<'_, Vec<Target>> {
        self.targets.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Wakes the agent to collect asynchronous messages from its [`Switch`].
/// Cheap, never blocks, callable from any thread. Create one before the
/// agent (to hand to an [`AsyncQueue`]) and pass it to
/// [`Agent::start_with_notifier`], or take the agent's with
/// [`Agent::notifier`].
#[derive(Clone, Debug, Default)]
pub struct AsyncNotifier(Arc<Notify>);

impl AsyncNotifier {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn notify(&self) {
        self.0.notify_one();
    }

    pub(crate) async fn notified(&self) {
        self.0.notified().await
    }
}

/// Why the agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("an ssl:/pssl: target needs TLS files (CA, certificate, key)")]
    NoTls,
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("listening on {target}: {err}")]
    Bind { target: Target, err: std::io::Error },
    /// Another process accepts connections on a `punix:` target's path.
    #[error("listening on {target}: another process is already listening on {}", path.display())]
    InUse { target: Target, path: PathBuf },
    #[error("{target}: {why}")]
    BadTarget { target: Target, why: &'static str },
}

/// A bound passive target.
enum Listener {
    Tcp(TcpListener),
    /// The socket file goes with the listener: removed when it is dropped.
    Unix(UnixListener, unix::SocketFile),
}

/// An accepted connection.
enum Accepted {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Listener {
    async fn accept(&self) -> std::io::Result<(Accepted, Endpoint)> {
        match self {
            Listener::Tcp(l) => {
                let (s, peer) = l.accept().await?;
                let _ = s.set_nodelay(true);
                Ok((Accepted::Tcp(s), Endpoint::Inet(peer)))
            }
            Listener::Unix(l, file) => {
                let (s, _) = l.accept().await?;
                Ok((Accepted::Unix(s), Endpoint::Unix(file.path().to_path_buf())))
            }
        }
    }
}

/// Binds one passive target; returns the listener and its bound address
/// (the port the system chose for port 0).
async fn bind(t: &Target) -> Result<(Listener, Endpoint), AgentError> {
    let bind_err = |err| AgentError::Bind { target: t.clone(), err };
    match &t.addr {
        Endpoint::Inet(a) => {
            let l = TcpListener::bind(a).await.map_err(bind_err)?;
            let local = l.local_addr().map_err(bind_err)?;
            Ok((Listener::Tcp(l), Endpoint::Inet(local)))
        }
        Endpoint::Unix(p) => {
            let (l, file) = unix::bind(p).map_err(|e| match e {
                unix::BindError::InUse => AgentError::InUse { target: t.clone(), path: p.clone() },
                unix::BindError::Io(err) => bind_err(err),
            })?;
            l.set_nonblocking(true).map_err(bind_err)?;
            let l = UnixListener::from_std(l).map_err(bind_err)?;
            Ok((Listener::Unix(l, file), Endpoint::Unix(p.clone())))
        }
    }
}

/// A running agent. Dropping it stops every task (connections close).
pub struct Agent {
    shared: Arc<Shared>,
    cfg: Arc<AgentConfig>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    listeners: Vec<(Target, Endpoint)>,
    /// What a target's tasks are started with (its own `shutdown` put in).
    ctx: conn::Ctx,
    tls: Option<TlsContext>,
    /// One stop switch per running target, by its text: setting it (or
    /// dropping it) ends the target's listener or connector and every
    /// connection that came from it.
    running: BTreeMap<String, watch::Sender<bool>>,
}

impl Agent {
    /// Bind the passive targets, start connecting to the active ones and
    /// start the core. Must be called inside a tokio runtime.
    pub async fn start<S: Switch>(cfg: AgentConfig, switch: S) -> Result<Agent, AgentError> {
        Self::start_with_notifier(cfg, switch, AsyncNotifier::new()).await
    }

    /// [`Agent::start`] with a notifier created beforehand (so the
    /// datapath side of `switch` can hold it).
    pub async fn start_with_notifier<S: Switch>(
        cfg: AgentConfig,
        switch: S,
        wake: AsyncNotifier,
    ) -> Result<Agent, AgentError> {
        let cfg = Arc::new(cfg);
        for t in &cfg.targets {
            t.check().map_err(|why| AgentError::BadTarget { target: t.clone(), why })?;
        }
        let tls = if cfg.targets.iter().any(|t| t.transport == Transport::Ssl) {
            Some(TlsContext::load(cfg.tls.as_ref().ok_or(AgentError::NoTls)?)?)
        } else {
            None
        };
        let mut bound = Vec::new();
        for t in cfg.targets.iter().filter(|t| t.passive) {
            let (l, local) = bind(t).await?;
            info!(target = %t, %local, "listening");
            bound.push((t.clone(), local, l));
        }
        let (events, _) = broadcast::channel(256);
        let shared = Arc::new(Shared {
            counters: Counters::default(),
            status: Mutex::new(BTreeMap::new()),
            controllers: watch::Sender::new(0),
            events,
            wake,
            next_id: AtomicU64::new(1),
            targets: Mutex::new(cfg.targets.clone()),
        });
        let (shutdown, shutdown_rx) = watch::channel(false);
        let (core_tx, core_rx) = mpsc::channel(1024);
        let ctx = conn::Ctx {
            cfg: cfg.clone(),
            shared: shared.clone(),
            core: core_tx,
            shutdown: shutdown_rx.clone(),
        };
        let mut tasks = Vec::new();
        let core = core::Core::new(switch, cfg.clone(), shared.clone());
        tasks.push(tokio::spawn(core.run(core_rx, shutdown_rx)));
        let mut agent = Agent {
            shared,
            cfg: cfg.clone(),
            shutdown,
            tasks,
            listeners: Vec::new(),
            ctx,
            tls,
            running: BTreeMap::new(),
        };
        for (t, local, l) in bound {
            agent.run_target(t, Some((l, local)));
        }
        for t in cfg.targets.iter().filter(|t| !t.passive) {
            agent.run_target(t.clone(), None);
        }
        Ok(agent)
    }

    /// Starts the tasks of one target: a bound listener's accept loop, or
    /// an active target's connector. Each target gets its own stop switch.
    fn run_target(&mut self, t: Target, bound: Option<(Listener, Endpoint)>) {
        // Only ssl:/pssl: targets speak TLS; tcp:/ptcp: stay plain even
        // when another target needs the TLS context.
        let tls = self.tls.clone().filter(|_| t.transport == Transport::Ssl);
        let (stop, stop_rx) = watch::channel(false);
        let ctx = conn::Ctx { shutdown: stop_rx, ..self.ctx.clone() };
        match bound {
            Some((l, local)) => {
                self.listeners.push((t.clone(), local));
                self.tasks.push(tokio::spawn(listen_loop(ctx, l, t.clone(), tls)));
            }
            None => {
                let Endpoint::Inet(addr) = t.addr else { return };
                self.tasks.push(tokio::spawn(active_loop(ctx, t.clone(), addr, tls)));
            }
        }
        self.running.insert(t.to_string(), stop);
    }

    /// The targets running now: those configured at start plus those
    /// added, minus those removed.
    pub fn targets(&self) -> Vec<Target> {
        self.shared.targets_mut().clone()
    }

    /// Starts one more target while the agent runs (configuration reload):
    /// binds a passive one (returning the address bound) or starts
    /// connecting to an active one. Connections of other targets are not
    /// touched. The agent's other settings (timeouts, queue lengths, TLS
    /// files) are the ones it started with; an `ssl:`/`pssl:` target
    /// needs the agent to have started with TLS files.
    pub async fn add_target(&mut self, t: Target) -> Result<Option<Endpoint>, AgentError> {
        if self.running.contains_key(&t.to_string()) {
            return Err(AgentError::BadTarget { target: t, why: "already running" });
        }
        t.check().map_err(|why| AgentError::BadTarget { target: t.clone(), why })?;
        if t.transport == Transport::Ssl && self.tls.is_none() {
            let files = self.cfg.tls.as_ref().ok_or(AgentError::NoTls)?;
            self.tls = Some(TlsContext::load(files)?);
        }
        let local = if t.passive {
            // A listener just removed on the same port (its address
            // changed) lets go of it when its task next runs: retry a busy
            // address for up to a second.
            let mut tries = 0;
            let (l, local) = loop {
                match bind(&t).await {
                    Err(AgentError::Bind { err, .. })
                        if err.kind() == std::io::ErrorKind::AddrInUse && tries < 20 =>
                    {
                        tries += 1;
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                    r => break r?,
                }
            };
            info!(target = %t, %local, "listening (added)");
            self.run_target(t.clone(), Some((l, local.clone())));
            Some(local)
        } else {
            info!(target = %t, "controller added");
            self.run_target(t.clone(), None);
            None
        };
        self.shared.targets_mut().push(t);
        Ok(local)
    }

    /// Stops one target while the agent runs: a listener stops accepting
    /// (a unix socket's file is removed) and every connection that came
    /// from it closes; an active target's connection closes and is not
    /// retried. Returns whether the target was running.
    pub fn remove_target(&mut self, t: &Target) -> bool {
        let Some(stop) = self.running.remove(&t.to_string()) else { return false };
        let _ = stop.send(true);
        self.listeners.retain(|(l, _)| l != t);
        self.shared.targets_mut().retain(|x| x != t);
        info!(target = %t, "target removed: its connections are closed");
        true
    }

    /// Passive targets and the addresses they are bound to (useful with
    /// port 0; a unix socket's is its path).
    pub fn listeners(&self) -> &[(Target, Endpoint)] {
        &self.listeners
    }

    /// Connections that count as controllers and are up.
    pub fn controllers_connected(&self) -> usize {
        *self.shared.controllers.borrow()
    }

    /// Watch [`Agent::controllers_connected`] change.
    pub fn watch_controllers(&self) -> watch::Receiver<usize> {
        self.shared.controllers.subscribe()
    }

    pub fn fail_mode(&self) -> FailMode {
        self.cfg.fail_mode
    }

    /// Whether the switch should currently behave per [`Agent::fail_mode`].
    pub fn in_fail_mode(&self) -> bool {
        self.controllers_connected() == 0
    }

    /// Events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<AgentEvent> {
        self.shared.events.subscribe()
    }

    /// A handle for the datapath to say asynchronous messages are queued.
    pub fn notifier(&self) -> AsyncNotifier {
        self.shared.wake.clone()
    }

    pub fn stats(&self) -> AgentStats {
        self.observer().stats()
    }

    /// Live connections (after HELLO), by id.
    pub fn connections(&self) -> Vec<ConnStatus> {
        self.shared.status_mut().values().cloned().collect()
    }

    /// A cheap, cloneable read-only view of the agent's counters and
    /// connections, for observers on other tasks (the metrics endpoint).
    pub fn observer(&self) -> AgentObserver {
        AgentObserver { shared: self.shared.clone() }
    }

    /// Stop everything and wait (at most 5 s) for the tasks to end.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        for stop in self.running.values() {
            let _ = stop.send(true);
        }
        let tasks = std::mem::take(&mut self.tasks);
        let all = async {
            for t in tasks {
                let _ = t.await;
            }
        };
        if tokio::time::timeout(Duration::from_secs(5), all).await.is_err() {
            warn!("agent tasks did not stop within 5 s");
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
        for stop in self.running.values() {
            let _ = stop.send(true);
        }
    }
}

/// What [`Agent::observer`] returns: the agent's counters, live
/// connections and configured targets, readable from any thread.
#[derive(Clone)]
pub struct AgentObserver {
    shared: Arc<Shared>,
}

impl AgentObserver {
    /// Every running target (passive and active).
    pub fn targets(&self) -> Vec<Target> {
        self.shared.targets_mut().clone()
    }

    /// Live connections (after HELLO), by id.
    pub fn connections(&self) -> Vec<ConnStatus> {
        self.shared.status_mut().values().cloned().collect()
    }

    /// Agent-wide counters.
    pub fn stats(&self) -> AgentStats {
        let c = &self.shared.counters;
        AgentStats {
            packet_in_frames: c.packet_in_frames.load(Relaxed),
            packet_in_sent: c.packet_in_sent.load(Relaxed),
            packet_in_dropped_rate: c.packet_in_dropped_rate.load(Relaxed),
            packet_in_dropped_queue: c.packet_in_dropped_queue.load(Relaxed),
            packet_in_unsent: c.packet_in_unsent.load(Relaxed),
            overflow_disconnects: c.overflow_disconnects.load(Relaxed),
            probe_timeouts: c.probe_timeouts.load(Relaxed),
            connect_attempts: c.connect_attempts.load(Relaxed),
        }
    }
}

/// Accepts connections until shutdown; each runs [`conn::run`] on its own
/// task, after a TLS handshake for `pssl:`. Dropping the listener at the
/// end removes a unix socket's file.
async fn listen_loop(ctx: conn::Ctx, l: Listener, target: Target, tls: Option<TlsContext>) {
    let slots = Arc::new(Semaphore::new(ctx.cfg.max_passive_conns.max(1)));
    let mut shutdown = ctx.shutdown.clone();
    let controller = ctx.cfg.passive_counts_as_controller;
    loop {
        let accepted = tokio::select! {
            _ = shutdown.wait_for(|v| *v) => return,
            a = l.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // E.g. EMFILE: back off instead of spinning.
                warn!(%target, "accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            warn!(%target, %peer, "too many connections: refused");
            continue;
        };
        let ctx = ctx.clone();
        let tls = tls.clone();
        let target = target.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let p = peer.clone();
            let t = target.clone();
            let ended = match (stream, tls) {
                (Accepted::Unix(s), _) => conn::run(ctx, s, p, t, controller).await,
                (Accepted::Tcp(tcp), None) => conn::run(ctx, tcp, p, t, controller).await,
                (Accepted::Tcp(tcp), Some(tls)) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(tls.server);
                    match tokio::time::timeout(ctx.cfg.connect_timeout, acceptor.accept(tcp)).await
                    {
                        Ok(Ok(s)) => conn::run(ctx, s, p, t, controller).await,
                        Ok(Err(e)) => {
                            warn!(%target, %peer, "TLS handshake failed: {}", tls::why(&e));
                            return;
                        }
                        Err(_) => {
                            warn!(%target, %peer, "TLS handshake timed out");
                            return;
                        }
                    }
                }
            };
            debug!(%target, %peer, reason = %ended.reason, "passive connection ended");
        });
    }
}

/// Connect to `target` again and again, with exponential backoff between
/// failures (reset after every connection that completed HELLO).
async fn active_loop(ctx: conn::Ctx, target: Target, addr: SocketAddr, tls: Option<TlsContext>) {
    let mut shutdown = ctx.shutdown.clone();
    let min = ctx.cfg.backoff_min.max(Duration::from_millis(1));
    let max = ctx.cfg.backoff_max.max(min);
    let mut backoff = min;
    loop {
        if *shutdown.borrow() {
            return;
        }
        ctx.shared.counters.connect_attempts.fetch_add(1, Relaxed);
        let established = tokio::select! {
            _ = shutdown.wait_for(|v| *v) => return,
            e = connect_once(&ctx, &target, addr, tls.as_ref()) => e,
        };
        if established {
            backoff = min;
        }
        debug!(%target, ?backoff, "reconnecting after backoff");
        tokio::select! {
            _ = shutdown.wait_for(|v| *v) => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        if !established {
            backoff = (backoff * 2).min(max);
        }
    }
}

/// One connection attempt and, if it succeeds, the whole session. Returns
/// whether the HELLO exchange completed.
async fn connect_once(
    ctx: &conn::Ctx,
    target: &Target,
    addr: SocketAddr,
    tls: Option<&TlsContext>,
) -> bool {
    let tcp = match tokio::time::timeout(ctx.cfg.connect_timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            debug!(%target, "connect: {e}");
            return false;
        }
        Err(_) => {
            debug!(%target, "connect timed out");
            return false;
        }
    };
    let _ = tcp.set_nodelay(true);
    let peer = Endpoint::Inet(addr);
    let ended = match tls {
        None => conn::run(ctx.clone(), tcp, peer, target.clone(), true).await,
        Some(tls) => {
            let connector = tokio_rustls::TlsConnector::from(tls.client.clone());
            let name = tls::server_name(addr.ip());
            match tokio::time::timeout(ctx.cfg.connect_timeout, connector.connect(name, tcp)).await
            {
                Ok(Ok(s)) => conn::run(ctx.clone(), s, peer, target.clone(), true).await,
                Ok(Err(e)) => {
                    warn!(%target, "TLS handshake failed: {}", tls::why(&e));
                    return false;
                }
                Err(_) => {
                    warn!(%target, "TLS handshake timed out");
                    return false;
                }
            }
        }
    };
    info!(%target, reason = %ended.reason, "controller connection ended");
    ended.established
}
