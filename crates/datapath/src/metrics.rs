//! Metrics: the switch's counters in the Prometheus text exposition format
//! (version 0.0.4), served over HTTP by `sluice run --metrics ADDR:PORT`.
//!
//! ## What is exported
//! Nothing here counts on the forwarding path: every number is one the
//! switch already keeps, read when scraped.
//! - per port (`port`, `name` labels): the pipeline's OpenFlow counters
//!   (rx/tx packets, bytes, drops), the port's own (kernel drops, receive
//!   and transmit errors) and frames the port refused on transmit;
//! - per flow table (`table`): lookups, matches, flows;
//! - per worker (`worker`): exact-match and megaflow cache hits and misses,
//!   megaflow entries and masks, installs (each worker copies its cache
//!   counters after a round that received frames), busy time (rounds
//!   that received frames) with its fraction of the worker's life, and
//!   frames received (busy time over frames is the busy time per packet,
//!   Open vSwitch's "processing cycles per packet" in nanoseconds);
//! - the upcall queue (PACKET_INs, FLOW_REMOVED, PORT_STATUS waiting for
//!   the agent): depth, capacity, drops;
//! - frames MAC learning handled (fail standalone) and dropped: with the
//!   tables' lookups they account for every received frame; frames a flow
//!   output to a port the switch no longer has (`Tx::no_port`);
//! - per configured controller (`target`): up or down, and per live
//!   OpenFlow connection its role; agent counters (frames sent to the
//!   controller, one each; PACKET_IN messages sent, dropped by rate or
//!   queue, unsent for want of a connection, per connection; probe
//!   timeouts, connection attempts).
//!
//! ## Format
//! Each family has one `# HELP` and one `# TYPE` line before its samples;
//! counters end in `_total`. Label values are escaped as the format says
//! (`\\`, `\"`, `\n`); help texts escape `\\` and `\n`.
//!
//! ## Serving
//! [`serve`] is a small HTTP/1.1 responder on the daemon's tokio runtime:
//! `GET /metrics` (or `/`) answers 200 with the text, other paths 404,
//! other methods 405; one request per connection (`Connection: close`),
//! the request head bounded (8 KiB, 5 s). Rendering takes the pipeline's
//! control lock briefly, so it runs on a blocking thread, never on the
//! agent's.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use sluice_agent::AgentObserver;
use sluice_ofp::message::controller_role;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tracing::{debug, warn};

use crate::shared::{lock, Shared};
use crate::PortReport;
use sluice_pipeline::CacheStats;

/// The content type of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A read-only handle on a running datapath's counters (cheap to clone;
/// usable from any thread).
#[derive(Clone)]
pub struct Probe {
    pub(crate) shared: Arc<Shared>,
}

/// One flow table's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableReport {
    pub id: u8,
    pub flows: u64,
    pub lookups: u64,
    pub matches: u64,
}

/// One worker's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerReport {
    pub id: usize,
    pub busy_ns: u64,
    pub busy_rounds: u64,
    /// Frames received (in busy rounds).
    pub packets: u64,
    /// The worker's caches, as of its last busy round.
    pub cache: CacheStats,
}

impl Probe {
    /// Ports in the pipeline, by number, with their counters.
    pub fn ports(&self) -> Vec<PortReport> {
        crate::port_reports(&self.shared)
    }

    /// Datapath-wide counters.
    pub fn stats(&self) -> crate::DatapathStats {
        crate::datapath_stats(&self.shared)
    }

    /// Every flow table's counters, by id.
    pub fn tables(&self) -> Vec<TableReport> {
        let pb = lock(&self.shared.publisher);
        pb.master()
            .tables()
            .iter()
            .enumerate()
            .map(|(i, t)| TableReport {
                id: i as u8,
                flows: t.len() as u64,
                lookups: t.lookup_count(),
                matches: t.matched_count(),
            })
            .collect()
    }

    /// Every worker's counters, by id.
    pub fn workers(&self) -> Vec<WorkerReport> {
        self.shared
            .workers
            .iter()
            .enumerate()
            .map(|(id, w)| WorkerReport {
                id,
                busy_ns: w.busy_ns.load(Relaxed),
                busy_rounds: w.busy_rounds.load(Relaxed),
                packets: w.packets.load(Relaxed),
                cache: *lock(&w.cache),
            })
            .collect()
    }

    /// Messages waiting in the upcall queue, and its capacity.
    pub fn upcall_queue(&self) -> (usize, usize) {
        (lock(&self.shared.async_q).len(), self.shared.async_cap)
    }

    /// Nanoseconds since the datapath started.
    pub fn uptime_ns(&self) -> u64 {
        self.shared.now_ns()
    }
}

/// Text in the exposition format, family by family.
#[derive(Default)]
pub struct Exposition {
    out: String,
}

/// A metric family's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

impl Exposition {
    /// Starts family `name` (its HELP and TYPE lines).
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) {
        let kind = match kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        };
        let help = help.replace('\\', "\\\\").replace('\n', "\\n");
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One sample of the current family.
    pub fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                escape_label(&mut self.out, v);
                self.out.push('"');
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {}", format_value(value));
    }

    /// A family with one sample per item of `items`.
    fn each<T>(
        &mut self,
        name: &str,
        kind: Kind,
        help: &str,
        items: &[T],
        f: impl Fn(&T) -> (Vec<(&'static str, String)>, f64),
    ) {
        self.family(name, kind, help);
        for it in items {
            let (labels, v) = f(it);
            let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            self.sample(name, &l, v);
        }
    }

    pub fn finish(self) -> String {
        self.out
    }
}

/// Escapes a label value: backslash, double quote and newline.
fn escape_label(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// A sample value: integers without a fraction, `NaN`/`+Inf`/`-Inf` as the
/// format spells them.
fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn role_name(r: u32) -> String {
    match r {
        controller_role::EQUAL => "equal".into(),
        controller_role::MASTER => "master".into(),
        controller_role::SLAVE => "slave".into(),
        n => format!("{n}"),
    }
}

/// Everything, in the text format.
pub fn render(dp: &Probe, agent: Option<&AgentObserver>) -> String {
    let mut e = Exposition::default();
    let ports = dp.ports();
    let pl = |p: &PortReport| vec![("port", p.port_no.to_string()), ("name", p.name.clone())];
    type PortField = fn(&PortReport) -> u64;
    let port_counters: [(&str, &str, PortField); 11] = [
        ("sluice_port_rx_packets_total", "Frames received (OpenFlow port stats).", |p| {
            p.counters.rx_packets
        }),
        ("sluice_port_rx_bytes_total", "Bytes received (OpenFlow port stats).", |p| {
            p.counters.rx_bytes
        }),
        ("sluice_port_tx_packets_total", "Frames sent (OpenFlow port stats).", |p| {
            p.counters.tx_packets
        }),
        ("sluice_port_tx_bytes_total", "Bytes sent (OpenFlow port stats).", |p| {
            p.counters.tx_bytes
        }),
        (
            "sluice_port_rx_dropped_total",
            "Frames the pipeline dropped on receive (port down or no-recv).",
            |p| p.counters.rx_dropped,
        ),
        ("sluice_port_tx_dropped_total", "Frames the pipeline dropped on transmit.", |p| {
            p.counters.tx_dropped
        }),
        (
            "sluice_port_kernel_rx_dropped_total",
            "Frames lost before the switch saw them (receive ring full).",
            |p| p.port.rx_dropped,
        ),
        (
            "sluice_port_rx_errors_total",
            "Frames discarded on receive (malformed or too long).",
            |p| p.port.rx_errors,
        ),
        ("sluice_port_tx_errors_total", "Frames the port could never send.", |p| p.port.tx_errors),
        (
            "sluice_port_device_tx_dropped_total",
            "Frames the port dropped on transmit (link down, device busy).",
            |p| p.port.tx_dropped,
        ),
        ("sluice_port_tx_failed_total", "Frames the port refused on transmit.", |p| p.tx_failed),
    ];
    for (name, help, f) in port_counters {
        e.each(name, Kind::Counter, help, &ports, |p| (pl(p), f(p) as f64));
    }
    e.each("sluice_port_up", Kind::Gauge, "1 if the port is live.", &ports, |p| {
        (pl(p), f64::from(u8::from(p.live)))
    });

    let tables = dp.tables();
    let tl = |t: &TableReport| vec![("table", t.id.to_string())];
    e.each("sluice_table_lookups_total", Kind::Counter, "Lookups in the table.", &tables, |t| {
        (tl(t), t.lookups as f64)
    });
    e.each(
        "sluice_table_matches_total",
        Kind::Counter,
        "Lookups that matched a flow.",
        &tables,
        |t| (tl(t), t.matches as f64),
    );
    e.each("sluice_table_flows", Kind::Gauge, "Flows in the table.", &tables, |t| {
        (tl(t), t.flows as f64)
    });

    let workers = dp.workers();
    let uptime = dp.uptime_ns();
    let wl = |w: &WorkerReport| vec![("worker", w.id.to_string())];
    e.family(
        "sluice_cache_lookups_total",
        Kind::Counter,
        "Cache lookups by cache (exact, megaflow) and result (hit, miss).",
    );
    for w in &workers {
        let id = w.id.to_string();
        for (cache, result, v) in [
            ("exact", "hit", w.cache.exact_hits),
            ("exact", "miss", w.cache.exact_misses),
            ("megaflow", "hit", w.cache.megaflow_hits),
            ("megaflow", "miss", w.cache.megaflow_misses),
        ] {
            let l = [("worker", id.as_str()), ("cache", cache), ("result", result)];
            e.sample("sluice_cache_lookups_total", &l, v as f64);
        }
    }
    e.each(
        "sluice_cache_installs_total",
        Kind::Counter,
        "Slow-path walks that installed cache entries.",
        &workers,
        |w| (wl(w), w.cache.installs as f64),
    );
    e.each(
        "sluice_megaflow_entries",
        Kind::Gauge,
        "Megaflow cache entries (stale ones included).",
        &workers,
        |w| (wl(w), w.cache.megaflow_entries as f64),
    );
    e.each("sluice_megaflow_masks", Kind::Gauge, "Distinct megaflow masks.", &workers, |w| {
        (wl(w), w.cache.megaflow_masks as f64)
    });
    e.each(
        "sluice_worker_busy_seconds_total",
        Kind::Counter,
        "Time the worker spent in rounds that received frames.",
        &workers,
        |w| (wl(w), w.busy_ns as f64 / 1e9),
    );
    e.each(
        "sluice_worker_packets_total",
        Kind::Counter,
        "Frames the worker received; busy seconds over these is its busy time per packet.",
        &workers,
        |w| (wl(w), w.packets as f64),
    );
    e.each(
        "sluice_worker_busy_rounds_total",
        Kind::Counter,
        "Worker rounds that received frames.",
        &workers,
        |w| (wl(w), w.busy_rounds as f64),
    );
    e.each(
        "sluice_worker_busy_ratio",
        Kind::Gauge,
        "Busy time over the datapath's uptime (rate() of the busy seconds gives it per interval).",
        &workers,
        |w| (wl(w), if uptime == 0 { 0.0 } else { (w.busy_ns as f64 / uptime as f64).min(1.0) }),
    );

    let s = dp.stats();
    let (depth, cap) = dp.upcall_queue();
    let scalars: [(&str, Kind, &str, f64); 11] = [
        ("sluice_packets_total", Kind::Counter, "Frames the workers received.", s.packets as f64),
        ("sluice_bursts_total", Kind::Counter, "Receive bursts processed.", s.bursts as f64),
        (
            "sluice_tx_dropped_total",
            Kind::Counter,
            "Frames produced by the pipeline that no port took.",
            s.tx_dropped as f64,
        ),
        (
            "sluice_upcall_queue_depth",
            Kind::Gauge,
            "Asynchronous messages (PACKET_IN, FLOW_REMOVED, PORT_STATUS) waiting for the agent.",
            depth as f64,
        ),
        ("sluice_upcall_queue_capacity", Kind::Gauge, "Capacity of the upcall queue.", cap as f64),
        (
            "sluice_upcall_dropped_total",
            Kind::Counter,
            "Asynchronous messages dropped because the upcall queue was full.",
            s.async_dropped as f64,
        ),
        (
            "sluice_standalone",
            Kind::Gauge,
            "1 while the switch forwards as a MAC-learning switch (fail mode standalone).",
            f64::from(u8::from(s.standalone)),
        ),
        (
            "sluice_standalone_packets_total",
            Kind::Counter,
            "Frames MAC learning received in fail mode standalone (they skip the flow tables).",
            s.learned as f64,
        ),
        (
            "sluice_standalone_dropped_total",
            Kind::Counter,
            "Frames MAC learning dropped (destination learned on the ingress port).",
            s.learn_dropped as f64,
        ),
        (
            "sluice_tx_no_port_total",
            Kind::Counter,
            "Frames a flow output to a port the switch does not have (its interface was removed).",
            s.no_port as f64,
        ),
        ("sluice_uptime_seconds", Kind::Gauge, "Seconds since the datapath started.", {
            uptime as f64 / 1e9
        }),
    ];
    for (name, kind, help, v) in scalars {
        e.family(name, kind, help);
        e.sample(name, &[], v);
    }

    if let Some(a) = agent {
        let conns = a.connections();
        e.family(
            "sluice_controller_up",
            Kind::Gauge,
            "1 while a connection to the configured controller is up.",
        );
        for t in a.targets().iter().filter(|t| !t.passive) {
            let up = conns.iter().any(|c| c.target == *t);
            e.sample(
                "sluice_controller_up",
                &[("target", &t.to_string())],
                f64::from(u8::from(up)),
            );
        }
        e.family(
            "sluice_openflow_connection_role",
            Kind::Gauge,
            "One sample (value 1) per live OpenFlow connection, with its role.",
        );
        for c in &conns {
            let (id, peer, target, role) =
                (c.id.to_string(), c.peer.to_string(), c.target.to_string(), role_name(c.role));
            let controller = if c.controller { "true" } else { "false" };
            let l = [
                ("conn", id.as_str()),
                ("peer", peer.as_str()),
                ("target", target.as_str()),
                ("role", role.as_str()),
                ("controller", controller),
            ];
            e.sample("sluice_openflow_connection_role", &l, 1.0);
        }
        let st = a.stats();
        let agent_counters: [(&str, &str, u64); 7] = [
            (
                "sluice_packet_in_frames_total",
                "Frames sent to the controller: PACKET_INs made, one per frame however many \
                 connections took it.",
                st.packet_in_frames,
            ),
            (
                "sluice_packet_in_sent_total",
                "PACKET_IN messages queued on connections (a frame counts once per connection).",
                st.packet_in_sent,
            ),
            (
                "sluice_packet_in_dropped_rate_total",
                "PACKET_INs refused by a connection's rate limit.",
                st.packet_in_dropped_rate,
            ),
            (
                "sluice_packet_in_dropped_queue_total",
                "PACKET_INs that found a connection's queue full.",
                st.packet_in_dropped_queue,
            ),
            (
                "sluice_packet_in_unsent_total",
                "PACKET_INs no connection took (none connected or asked for them, closing).",
                st.packet_in_unsent,
            ),
            (
                "sluice_probe_timeouts_total",
                "Connections closed by the inactivity probe.",
                st.probe_timeouts,
            ),
            (
                "sluice_controller_connect_attempts_total",
                "TCP connection attempts to active targets.",
                st.connect_attempts,
            ),
        ];
        for (name, help, v) in agent_counters {
            e.family(name, Kind::Counter, help);
            e.sample(name, &[], v as f64);
        }
    }
    e.finish()
}

/// Binds the metrics listener (call inside the runtime). A listener on
/// every address is warned about: the counters tell anyone who can reach
/// the port about the switch's traffic.
pub async fn bind(addr: SocketAddr) -> std::io::Result<TcpListener> {
    let l = TcpListener::bind(addr).await?;
    if addr.ip().is_unspecified() {
        warn!(
            %addr,
            "metrics endpoint on every address: anyone who reaches port {} reads the switch's \
             counters (bind it to 127.0.0.1 or a management address)",
            addr.port()
        );
    }
    Ok(l)
}

/// Answers scrapes on `l` until the runtime stops; `render` makes the text.
pub async fn serve(l: TcpListener, render: Arc<dyn Fn() -> String + Send + Sync>) {
    loop {
        let (stream, peer) = match l.accept().await {
            Ok(x) => x,
            Err(e) => {
                warn!("metrics: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let render = render.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, render).await {
                debug!(%peer, "metrics: {e}");
            }
        });
    }
}

/// Longest request head read.
const MAX_HEAD: usize = 8192;

async fn answer(
    mut s: tokio::net::TcpStream,
    render: Arc<dyn Fn() -> String + Send + Sync>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let read = async {
        let mut buf = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
            let n = s.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
            if head.len() > MAX_HEAD {
                break;
            }
        }
        Ok::<_, std::io::Error>(())
    };
    match tokio::time::timeout(Duration::from_secs(5), read).await {
        Ok(r) => r?,
        Err(_) => return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "request head")),
    }
    let text = String::from_utf8_lossy(&head);
    let mut words = text.lines().next().unwrap_or("").split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    let (status, ctype, body) = if head.len() > MAX_HEAD {
        ("431 Request Header Fields Too Large", "text/plain", "request head too long\n".into())
    } else if method != "GET" && method != "HEAD" {
        ("405 Method Not Allowed", "text/plain", format!("method {method:?} not allowed\n"))
    } else if path != "/metrics" && path != "/" {
        ("404 Not Found", "text/plain", format!("no {path:?} here; try /metrics\n"))
    } else {
        let body = tokio::task::spawn_blocking(move || render())
            .await
            .map_err(|e| std::io::Error::other(format!("rendering metrics: {e}")))?;
        ("200 OK", CONTENT_TYPE, body)
    };
    let mut resp = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: \
         close\r\n\r\n",
        body.len()
    );
    if method != "HEAD" {
        resp.push_str(&body);
    }
    s.write_all(resp.as_bytes()).await?;
    s.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_help_are_escaped() {
        let mut e = Exposition::default();
        e.family("x_total", Kind::Counter, "a \\ b\nc");
        e.sample("x_total", &[("name", "a\"b\\c\nd"), ("k", "v")], 3.0);
        e.sample("x_total", &[], 0.5);
        assert_eq!(
            e.finish(),
            "# HELP x_total a \\\\ b\\nc\n# TYPE x_total counter\n\
             x_total{name=\"a\\\"b\\\\c\\nd\",k=\"v\"} 3\nx_total 0.5\n"
        );
    }

    #[test]
    fn values_are_spelled_as_the_format_says() {
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(12.0), "12");
        assert_eq!(format_value(0.25), "0.25");
    }
}
