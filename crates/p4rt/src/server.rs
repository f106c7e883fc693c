//! The `P4Runtime` gRPC service over a [`Device`].
//!
//! - `Capabilities`: the version of the vendored protos ([`API_VERSION`]).
//! - `SetForwardingPipelineConfig`: `p4_device_config` is the P4-16
//!   source; sluice compiles it (a diagnostic is INVALID_ARGUMENT with
//!   its `file:line:col`) and builds its own P4Info (a P4Info sent along
//!   must agree with it on table and action ids and names). VERIFY
//!   checks; VERIFY_AND_SAVE checks and keeps it for COMMIT;
//!   VERIFY_AND_COMMIT replaces the running pipeline with empty tables;
//!   RECONCILE_AND_COMMIT replaces it keeping every entry (and modified
//!   default entry) of tables the new program still has (same name;
//!   fields, actions and parameters matched by name), refusing the whole
//!   change, nothing applied, if one cannot be kept; COMMIT applies the
//!   saved one.
//! - `Write`: needs the primary's election id (PERMISSION_DENIED
//!   otherwise). CONTINUE_ON_ERROR applies each update on its own;
//!   ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC apply all or none
//!   ([`crate::batch`]). When any update fails the call fails with
//!   UNKNOWN and a `google.rpc.Status` in the details holding one
//!   `p4.v1.Error` per update, in order (OK for those applied; ABORTED
//!   for those rolled back or not attempted). The engine lock is held for
//!   the whole batch in every mode: packets see a batch whole.
//! - `Read`: [`crate::read`]. `StreamChannel`: [`crate::stream`].
//! - `DigestEntry` writes and reads, and the task that sends
//!   `DigestList`s (started by [`serve`]): [`crate::digest`].
//! - Idle timeouts and the task that sends `IdleTimeoutNotification`s
//!   (started by [`serve`]): [`crate::idle`]. RECONCILE_AND_COMMIT keeps
//!   the kept entries' direct cells whole (counts, meter configuration
//!   and bucket fill, per-colour counts) where the new table has them,
//!   and their idle timeouts with the time of the last hit (a timeout the
//!   new table cannot hold refuses the change).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use prost::Message as _;
use tokio_stream::wrappers::ReceiverStream;
use tonic::codegen::http;
use tonic::{Code, Request, Response, Status};

use crate::convert::{P4Error, P4Result};
use crate::device::{lock, Device, State};
use crate::pipeline::Pipeline;
use crate::proto::google::rpc;
use crate::proto::p4::v1 as p4v1;
use crate::proto::p4::v1::p4_runtime_server::{P4Runtime, P4RuntimeServer};
use crate::stream::{self, u128_of};
use p4v1::set_forwarding_pipeline_config_request::Action as SetAction;
use sluice_p4::engines::Engine;
use sluice_p4::target::{DirectState, Manage as _};

/// The P4Runtime version of the vendored protos.
pub const API_VERSION: &str = "1.5.0";

/// Largest request message accepted: 16 MiB. A bigger one is refused
/// with RESOURCE_EXHAUSTED before it is read ([`resource_exhausted`]).
/// Room for the largest message a controller sends, a
/// SetForwardingPipelineConfig carrying a P4 source and its P4Info (large
/// public programs: hundreds of KiB each, an estimate), and a 1000-update
/// Write (under 100 bytes an entry for rt.p4's `l2`, a few hundred with
/// long keys: under 1 MiB); while each message in flight costs at most
/// this much memory.
pub const MAX_MESSAGE: usize = 16 << 20;

/// Largest answer sent: a Read of a big table is one ReadResponse, so
/// answers may be larger than requests (clients set their own limit;
/// grpcio's default is 4 MiB).
pub const MAX_ANSWER: usize = 64 << 20;

/// How long a TLS handshake may take before the connection is dropped.
pub const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The service.
#[derive(Clone, Debug)]
pub struct Service {
    pub device: Arc<Device>,
}

fn check_device(device: &Device, id: u64) -> Result<(), Status> {
    if id != device.config.device_id {
        return Err(Status::not_found(format!(
            "no device with id {id} (this switch is device {})",
            device.config.device_id
        )));
    }
    Ok(())
}

fn check_primary(
    device: &Device,
    role: &str,
    election: &Option<p4v1::Uint128>,
) -> Result<(), Status> {
    let e = u128_of(election);
    if !lock(&device.arb).is_primary(role, e) {
        return Err(Status::permission_denied(match e {
            Some(e) => format!("election id {e} is not the primary's (role `{role}`)"),
            None => "no election id: only the primary client may write".to_string(),
        }));
    }
    Ok(())
}

/// The whole-call status for a Write whose updates gave `results`.
pub fn write_status(results: &[P4Result<()>]) -> Status {
    let details = results
        .iter()
        .map(|r| {
            let (code, message) = match r {
                Ok(()) => (Code::Ok, String::new()),
                Err(e) => (e.code, e.message.clone()),
            };
            let err = p4v1::Error { canonical_code: code as i32, message, ..Default::default() };
            prost_types::Any {
                type_url: "type.googleapis.com/p4.v1.Error".into(),
                value: err.encode_to_vec(),
            }
        })
        .collect();
    let failed = results.iter().filter(|r| r.is_err()).count();
    let message = format!("{failed} of {} updates failed", results.len());
    let st = rpc::Status { code: Code::Unknown as i32, message: message.clone(), details };
    Status::with_details(Code::Unknown, message, st.encode_to_vec().into())
}

/// An entry of the running pipeline that RECONCILE_AND_COMMIT keeps: the
/// write that puts it in the new one, and what that write cannot carry.
struct Kept {
    update: p4v1::Update,
    /// Its direct cells whole (counts, meter buckets, colour counts), if
    /// the old table has a direct counter or meter.
    direct: Option<DirectState>,
    /// Its idle watch, carried over (last hit, TTL start).
    watch: Option<crate::idle::Watch>,
}

/// Entries of `old` that `new` can hold, as writes to `new`.
fn reconcile(
    old: &Pipeline,
    st: &State,
    engine: &sluice_p4::engines::Engine,
    new: &Pipeline,
) -> P4Result<Vec<Kept>> {
    let now = std::time::Instant::now();
    let mut kept = Vec::new();
    for oid in &old.table_order {
        let ot = &old.tables[oid];
        let Some(nt) = new.tables.values().find(|t| t.name == ot.name) else { continue };
        let has_direct =
            old.direct_counter_of(*oid).is_some() || old.direct_meter_of(*oid).is_some();
        let hits = crate::idle::hits_of(engine, ot)?;
        let mut got = Vec::new();
        for default in [false, true] {
            let q = p4v1::Entity {
                entity: Some(p4v1::entity::Entity::TableEntry(p4v1::TableEntry {
                    table_id: *oid,
                    is_default_action: default,
                    ..Default::default()
                })),
            };
            crate::read::read(old, st, engine, &q, &mut got)?;
        }
        for ent in got {
            let Some(p4v1::entity::Entity::TableEntry(mut e)) = ent.entity else { continue };
            if e.is_const && !e.is_default_action || (e.is_default_action && nt.const_default) {
                continue;
            }
            let why = |what: String| {
                P4Error::invalid(format!("RECONCILE_AND_COMMIT: table `{}`: {what}", ot.name))
            };
            let handle = crate::resources::handle_of(old, st, engine, ot, &e)?;
            let direct = if has_direct {
                Some(engine.direct_state(&ot.engine_name, handle).map_err(&why)?)
            } else {
                None
            };
            let watch = if e.is_default_action {
                None
            } else {
                let (key, _) = crate::write::entry_key(ot, &e)?;
                st.index
                    .get(oid)
                    .and_then(|m| m.get(&key))
                    .and_then(|i| i.idle)
                    .map(|w| w.carried(hits.get(&handle).copied(), now))
            };
            e.table_id = nt.id;
            e.is_const = false;
            for m in &mut e.r#match {
                let name = &ot.field(m.field_id).map(|f| f.name.clone()).unwrap_or_default();
                let nf = nt
                    .fields
                    .iter()
                    .find(|f| &f.name == name)
                    .ok_or_else(|| why(format!("match field `{name}` is gone")))?;
                m.field_id = nf.id;
            }
            if let Some(p4v1::table_action::Type::Action(a)) =
                e.action.as_mut().and_then(|a| a.r#type.as_mut())
            {
                let oa = &old.actions[&a.action_id];
                let (&nid, na) = new
                    .actions
                    .iter()
                    .find(|(_, x)| x.name == oa.name)
                    .ok_or_else(|| why(format!("action `{}` is gone", oa.name)))?;
                a.action_id = nid;
                for q in &mut a.params {
                    let pname = oa
                        .params
                        .iter()
                        .find(|x| x.0 == q.param_id)
                        .map(|x| x.1.clone())
                        .unwrap_or_default();
                    let np = na.params.iter().find(|x| x.1 == pname).ok_or_else(|| {
                        why(format!("parameter `{pname}` of `{}` is gone", oa.name))
                    })?;
                    q.param_id = np.0;
                }
            }
            let ty = if e.is_default_action {
                p4v1::update::Type::Modify
            } else {
                p4v1::update::Type::Insert
            };
            let update = p4v1::Update {
                r#type: ty as i32,
                entity: Some(p4v1::Entity { entity: Some(p4v1::entity::Entity::TableEntry(e)) }),
            };
            kept.push(Kept { update, direct, watch });
        }
    }
    Ok(kept)
}

/// Writes a kept entry into the new pipeline `p` (state `st`, engine
/// `engine`) and puts back what the write cannot carry: the direct cells
/// the new table has (a cell it lacks goes) and the idle watch (an idle
/// timeout the new table cannot hold fails the write).
fn keep(p: &Pipeline, st: &mut State, engine: &mut Engine, k: &Kept) -> P4Result<()> {
    let fail = |what: String| {
        P4Error::invalid(format!("RECONCILE_AND_COMMIT: an entry cannot be kept: {what}"))
    };
    crate::write::update(p, st, engine, &k.update).map_err(|e| fail(e.message))?;
    let Some(p4v1::entity::Entity::TableEntry(e)) =
        k.update.entity.as_ref().and_then(|x| x.entity.as_ref())
    else {
        return Ok(());
    };
    let t = p.table(e.table_id)?;
    let handle = crate::resources::handle_of(p, st, engine, t, e)?;
    if let Some(d) = &k.direct {
        let counter = p.direct_counter_of(t.id).is_some();
        let meter = p.direct_meter_of(t.id).is_some();
        if counter || meter {
            let d = DirectState {
                counter: if counter { d.counter } else { (0, 0) },
                meter: if meter { d.meter.clone() } else { Default::default() },
                colours: if meter { d.colours } else { [(0, 0); 3] },
            };
            engine.direct_restore(&t.engine_name, handle, &d).map_err(fail)?;
        }
    }
    if let Some(w) = k.watch {
        let (key, _) = crate::write::entry_key(t, e)?;
        if let Some(i) = st.index.get_mut(&t.id).and_then(|m| m.get_mut(&key)) {
            if let Some(nw) = i.idle.as_mut() {
                *nw = crate::idle::Watch { timeout_ns: nw.timeout_ns, ..w };
            }
        }
    }
    Ok(())
}

impl Service {
    fn set_pipeline(&self, r: &p4v1::SetForwardingPipelineConfigRequest) -> P4Result<()> {
        let action = SetAction::try_from(r.action)
            .map_err(|_| P4Error::invalid(format!("unknown action {}", r.action)))?;
        let mut st = lock(&self.device.state);
        if action == SetAction::Commit {
            let (p, engine) = st.saved.take().ok_or_else(|| {
                P4Error::new(
                    Code::FailedPrecondition,
                    "COMMIT: no config was saved with VERIFY_AND_SAVE",
                )
            })?;
            *lock(&self.device.engine) = engine;
            lock(&self.device.digests).reset(Some(&p));
            st.pipeline = Some(p);
            st.index.clear();
            st.mcast.clear();
            return Ok(());
        }
        let cfg = r.config.as_ref().ok_or_else(|| P4Error::invalid("no config"))?;
        let (mut p, mut engine) =
            Pipeline::compile(&cfg.p4_device_config, self.device.config.reference)?;
        if let Some(info) = &cfg.p4info {
            p.check_client_p4info(info)?;
        }
        p.cookie = cfg.cookie.map(|c| c.cookie);
        match action {
            SetAction::Verify => Ok(()),
            SetAction::VerifyAndSave => {
                st.saved = Some((Arc::new(p), engine));
                Ok(())
            }
            SetAction::VerifyAndCommit => {
                *lock(&self.device.engine) = engine;
                lock(&self.device.digests).reset(Some(&p));
                st.pipeline = Some(Arc::new(p));
                st.index.clear();
                st.mcast.clear();
                Ok(())
            }
            SetAction::ReconcileAndCommit => {
                let mut fresh = State::default();
                // The running engine stays locked from the read of its
                // entries to the swap: nothing it counts in between is
                // lost.
                let mut cur = lock(&self.device.engine);
                if let Some(old) = st.pipeline.clone() {
                    for k in &reconcile(&old, &st, &cur, &p)? {
                        keep(&p, &mut fresh, &mut engine, k)?;
                    }
                    for (g, copies) in &st.mcast {
                        sluice_p4::target::Target::set_multicast_group(&mut engine, *g, copies)
                            .map_err(P4Error::invalid)?;
                    }
                    fresh.mcast = st.mcast.clone();
                }
                *cur = engine;
                drop(cur);
                lock(&self.device.digests).reset(Some(&p));
                st.pipeline = Some(Arc::new(p));
                st.index = fresh.index;
                st.mcast = fresh.mcast;
                Ok(())
            }
            SetAction::Unspecified | SetAction::Commit => {
                Err(P4Error::invalid("action is UNSPECIFIED"))
            }
        }
    }
}

type BoxStream<T> = Pin<Box<dyn tokio_stream::Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl P4Runtime for Service {
    async fn write(
        &self,
        request: Request<p4v1::WriteRequest>,
    ) -> Result<Response<p4v1::WriteResponse>, Status> {
        let r = request.into_inner();
        check_device(&self.device, r.device_id)?;
        check_primary(&self.device, &r.role, &r.election_id)?;
        use p4v1::write_request::Atomicity;
        let all_or_none = match Atomicity::try_from(r.atomicity) {
            Ok(Atomicity::ContinueOnError) => false,
            Ok(Atomicity::RollbackOnError | Atomicity::DataplaneAtomic) => true,
            Err(_) => {
                return Err(Status::invalid_argument(format!("unknown atomicity {}", r.atomicity)))
            }
        };
        let mut st = lock(&self.device.state);
        let Some(p) = st.pipeline.clone() else {
            return Err(Status::failed_precondition("no forwarding pipeline is loaded"));
        };
        // Held until the whole batch (and any rollback) is done: the
        // forwarding thread takes this lock per packet, so no packet sees
        // part of a batch (crate::batch).
        let mut engine = lock(&self.device.engine);
        let mut digests = lock(&self.device.digests);
        if all_or_none {
            return match crate::batch::apply(&p, &mut st, &mut engine, &mut digests, &r.updates) {
                Ok(()) => Ok(Response::new(p4v1::WriteResponse {})),
                Err(results) => Err(write_status(&results)),
            };
        }
        let results: Vec<P4Result<()>> = r
            .updates
            .iter()
            .map(|u| crate::write::update_with_digests(&p, &mut st, &mut engine, &mut digests, u))
            .collect();
        if results.iter().all(|r| r.is_ok()) {
            Ok(Response::new(p4v1::WriteResponse {}))
        } else {
            Err(write_status(&results))
        }
    }

    type ReadStream = BoxStream<p4v1::ReadResponse>;

    async fn read(
        &self,
        request: Request<p4v1::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        let r = request.into_inner();
        check_device(&self.device, r.device_id)?;
        let st = lock(&self.device.state);
        let Some(p) = st.pipeline.clone() else {
            return Err(Status::failed_precondition("no forwarding pipeline is loaded"));
        };
        let engine = lock(&self.device.engine);
        let mut entities = Vec::new();
        for q in &r.entities {
            match &q.entity {
                Some(p4v1::entity::Entity::DigestEntry(d)) => {
                    lock(&self.device.digests).read(d, &mut entities)
                }
                _ => crate::read::read(&p, &st, &engine, q, &mut entities),
            }
            .map_err(|e| e.status())?;
        }
        let one = p4v1::ReadResponse { entities };
        Ok(Response::new(Box::pin(tokio_stream::iter([Ok(one)]))))
    }

    async fn set_forwarding_pipeline_config(
        &self,
        request: Request<p4v1::SetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4v1::SetForwardingPipelineConfigResponse>, Status> {
        let r = request.into_inner();
        check_device(&self.device, r.device_id)?;
        check_primary(&self.device, &r.role, &r.election_id)?;
        self.set_pipeline(&r).map_err(|e| e.status())?;
        Ok(Response::new(p4v1::SetForwardingPipelineConfigResponse {}))
    }

    async fn get_forwarding_pipeline_config(
        &self,
        request: Request<p4v1::GetForwardingPipelineConfigRequest>,
    ) -> Result<Response<p4v1::GetForwardingPipelineConfigResponse>, Status> {
        use p4v1::get_forwarding_pipeline_config_request::ResponseType as T;
        let r = request.into_inner();
        check_device(&self.device, r.device_id)?;
        let ty = T::try_from(r.response_type).map_err(|_| {
            Status::invalid_argument(format!("unknown response type {}", r.response_type))
        })?;
        let p = self
            .device
            .pipeline()
            .ok_or_else(|| Status::failed_precondition("no forwarding pipeline is loaded"))?;
        let cookie = p.cookie.map(|c| p4v1::forwarding_pipeline_config::Cookie { cookie: c });
        let (info, dev) = match ty {
            T::All => (true, true),
            T::CookieOnly => (false, false),
            T::P4infoAndCookie => (true, false),
            T::DeviceConfigAndCookie => (false, true),
        };
        let config = p4v1::ForwardingPipelineConfig {
            p4info: info.then(|| p.proto.clone()),
            p4_device_config: if dev { p.source.clone() } else { Vec::new() },
            cookie,
        };
        Ok(Response::new(p4v1::GetForwardingPipelineConfigResponse { config: Some(config) }))
    }

    type StreamChannelStream = BoxStream<p4v1::StreamMessageResponse>;

    async fn stream_channel(
        &self,
        request: Request<tonic::Streaming<p4v1::StreamMessageRequest>>,
    ) -> Result<Response<Self::StreamChannelStream>, Status> {
        let inbound = request.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(stream::STREAM_DEPTH);
        tokio::spawn(stream::run(self.device.clone(), inbound, tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn capabilities(
        &self,
        _request: Request<p4v1::CapabilitiesRequest>,
    ) -> Result<Response<p4v1::CapabilitiesResponse>, Status> {
        Ok(Response::new(p4v1::CapabilitiesResponse {
            p4runtime_api_version: API_VERSION.into(),
            experimental: None,
        }))
    }
}

/// The tonic service for `device`.
pub fn service(device: Arc<Device>) -> P4RuntimeServer<Service> {
    P4RuntimeServer::new(Service { device })
        .max_decoding_message_size(MAX_MESSAGE)
        .max_encoding_message_size(MAX_ANSWER)
}

/// The status tonic gives a request message over the decoding limit
/// (OUT_OF_RANGE, "decoded message length too large", sent before any
/// of it is read) made RESOURCE_EXHAUSTED, the code gRPC's spec and other
/// servers use for it. Tonic answers such a call with the status in the
/// response headers (a trailers-only response); other answers pass
/// unchanged.
pub fn resource_exhausted<B>(mut r: http::Response<B>) -> http::Response<B> {
    let h = r.headers();
    let out_of_range = h.get("grpc-status").is_some_and(|v| v == "11");
    let too_large = h
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|m| m.contains("decoded%20message%20length%20too%20large"));
    if out_of_range && too_large {
        let code = http::HeaderValue::from(Code::ResourceExhausted as i32);
        r.headers_mut().insert("grpc-status", code);
    }
    r
}

/// A TLS connection as tonic takes it.
struct TlsConn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>);

impl tonic::transport::server::Connected for TlsConn {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.0.get_ref().0.connect_info()
    }
}

impl tokio::io::AsyncRead for TlsConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for TlsConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        Pin::new(&mut self.0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }
}

/// TLS connections accepted on `listener` with `tls` (ALPN `h2` added:
/// gRPC clients require it). Each handshake runs on its own task, at most
/// [`HANDSHAKE_TIMEOUT`]; a refused one (no certificate, one that does not
/// chain to the CA, not TLS at all) is logged and dropped.
fn tls_incoming(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
) -> (ReceiverStream<std::io::Result<TlsConn>>, tokio::task::JoinHandle<()>) {
    let mut cfg = (*tls).clone();
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let task = tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // E.g. out of file descriptors: wait, then go on.
                    tracing::warn!(error = %e, "P4Runtime: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(s)) => {
                        let _ = tx.send(Ok(TlsConn(s))).await;
                    }
                    Ok(Err(e)) => {
                        tracing::warn!(%peer, error = %e, "P4Runtime: TLS handshake refused")
                    }
                    Err(_) => tracing::warn!(
                        %peer,
                        "P4Runtime: no TLS handshake within {} s",
                        HANDSHAKE_TIMEOUT.as_secs()
                    ),
                }
            });
        }
    });
    (ReceiverStream::new(rx), task)
}

/// Serves `device` on a bound listener (plain TCP) until `shutdown`
/// resolves.
pub async fn serve(
    device: Arc<Device>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    serve_with(device, listener, None, shutdown).await
}

/// Serves `device` on a bound listener until `shutdown` resolves: over
/// TLS with the rustls configuration `tls` when given (sluice's is
/// `sluice_agent::TlsContext`'s server side: a client must present a
/// certificate that chains to the CA), else plain TCP.
pub async fn serve_with(
    device: Arc<Device>,
    listener: tokio::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), tonic::transport::Error> {
    let digests = tokio::spawn(crate::digest::run(device.clone()));
    let idle = tokio::spawn(crate::idle::run(device.clone()));
    let router = tonic::transport::Server::builder()
        .layer(tower::util::MapResponseLayer::new(resource_exhausted::<tonic::body::Body>))
        .add_service(service(device));
    let r = match tls {
        None => {
            let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
            router.serve_with_incoming_shutdown(incoming, shutdown).await
        }
        Some(tls) => {
            let (incoming, accept) = tls_incoming(listener, tls);
            let r = router.serve_with_incoming_shutdown(incoming, shutdown).await;
            accept.abort();
            r
        }
    };
    digests.abort();
    idle.abort();
    r
}

/// Binds `addr` (port 0: an ephemeral port) and serves `device` on the
/// runtime `rt` (over TLS with `tls`, see [`serve_with`]) until
/// `shutdown` resolves; returns the bound address.
pub fn spawn(
    rt: &tokio::runtime::Runtime,
    device: Arc<Device>,
    addr: SocketAddr,
    tls: Option<Arc<rustls::ServerConfig>>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = rt.block_on(tokio::net::TcpListener::bind(addr))?;
    let bound = listener.local_addr()?;
    let h = rt.spawn(async move {
        if let Err(e) = serve_with(device, listener, tls, shutdown).await {
            tracing::warn!(error = %e, "P4Runtime server stopped");
        }
    });
    Ok((bound, h))
}
