//! `sluice top ADDR:PORT`: a live terminal view of a running switch's
//! ports, tables, caches, workers, upcall queue and controllers, read from
//! its metrics endpoint (`sluice run --metrics ADDR:PORT`), so it shows
//! exactly what Prometheus would scrape. Rates are the difference between
//! two scrapes over the time between them. `--once` prints one frame
//! (totals, rates over `--interval`) and exits; otherwise the screen is
//! redrawn every `--interval` seconds until interrupted (or `--frames N`).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The switch's metrics endpoint, e.g. 127.0.0.1:9750 (as given to
    /// `sluice run --metrics`).
    #[arg(value_name = "ADDR:PORT")]
    pub addr: String,
    /// Print one frame and exit (two scrapes, --interval apart, for rates).
    #[arg(long)]
    pub once: bool,
    /// Seconds between frames.
    #[arg(long, value_name = "SECS", default_value_t = 1.0)]
    pub interval: f64,
    /// Stop after N frames.
    #[arg(long, value_name = "N")]
    pub frames: Option<u64>,
}

/// One scrape: series (name and sorted labels) to values.
type Scrape = BTreeMap<(String, Vec<(String, String)>), f64>;

/// Reads the text format leniently (what `sluice run` writes): comments
/// skipped, `name{k="v",...} value` lines kept.
fn parse(text: &str) -> Result<Scrape> {
    let mut out = Scrape::new();
    for (n, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = || anyhow::anyhow!("metrics line {}: cannot read {line:?}", n + 1);
        let (series, value) = line.rsplit_once(' ').ok_or_else(bad)?;
        let value: f64 = match value {
            "NaN" => f64::NAN,
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| bad())?,
        };
        let (name, labels) = match series.split_once('{') {
            None => (series.to_string(), Vec::new()),
            Some((name, rest)) => (name.to_string(), labels(rest).ok_or_else(bad)?),
        };
        out.insert((name, labels), value);
    }
    Ok(out)
}

/// `k="v",...}` with the format's escapes.
fn labels(s: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        rest = rest.trim_start_matches(',');
        if rest.starts_with('}') {
            break;
        }
        let (k, r) = rest.split_once("=\"")?;
        let mut v = String::new();
        let mut chars = r.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => v.push('\n'),
                    c => v.push(c),
                },
                (_, c) => v.push(c),
            }
        };
        out.push((k.to_string(), v));
        rest = &r[end + 1..];
    }
    out.sort();
    Some(out)
}

fn scrape(addr: &str) -> Result<Scrape> {
    let sa = addr
        .to_socket_addrs()
        .with_context(|| format!("{addr}: not an ADDR:PORT"))?
        .next()
        .with_context(|| format!("{addr}: no address"))?;
    let mut s = TcpStream::connect_timeout(&sa, Duration::from_secs(5))
        .with_context(|| format!("connecting to the metrics endpoint {addr}"))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    s.write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).with_context(|| format!("reading from {addr}"))?;
    let raw = String::from_utf8_lossy(&raw);
    let Some((head, body)) = raw.split_once("\r\n\r\n") else {
        bail!("{addr}: not an HTTP answer");
    };
    let status = head.lines().next().unwrap_or("");
    if !status.contains(" 200 ") {
        bail!("{addr}: {status}");
    }
    parse(body)
}

/// Values of family `name`, by the value of label `key`.
fn by(s: &Scrape, name: &str, key: &str) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for ((n, labels), v) in s {
        if n == name {
            if let Some((_, k)) = labels.iter().find(|(l, _)| l == key) {
                *out.entry(k.clone()).or_insert(0.0) += v;
            }
        }
    }
    out
}

fn one(s: &Scrape, name: &str) -> f64 {
    s.get(&(name.to_string(), Vec::new())).copied().unwrap_or(0.0)
}

/// Sorts numeric keys numerically.
fn num_key(k: &str) -> (u64, String) {
    (k.parse().unwrap_or(u64::MAX), k.to_string())
}

/// One screen: totals from `now`, rates from `now - prev` over `secs`.
fn frame(addr: &str, now: &Scrape, prev: Option<&Scrape>, secs: f64) -> String {
    let mut o = String::new();
    let rate = |name: &str, key: &str, k: &str| -> String {
        match prev {
            Some(p) if secs > 0.0 => {
                let d = by(now, name, key).get(k).copied().unwrap_or(0.0)
                    - by(p, name, key).get(k).copied().unwrap_or(0.0);
                format!("{:.0}", (d / secs).max(0.0))
            }
            _ => "-".into(),
        }
    };
    o += &format!(
        "sluice top  {addr}  uptime {:.1} s  packets {:.0}  standalone {}\n\n",
        one(now, "sluice_uptime_seconds"),
        one(now, "sluice_packets_total"),
        if one(now, "sluice_standalone") > 0.0 { "yes" } else { "no" }
    );
    o += &format!(
        "{:<6} {:<16} {:>3} {:>12} {:>9} {:>12} {:>9} {:>8} {:>8}\n",
        "PORT", "NAME", "UP", "RX_PKTS", "RX_PPS", "TX_PKTS", "TX_PPS", "DROPS", "ERRORS"
    );
    let names: BTreeMap<String, String> = now
        .keys()
        .filter(|(n, _)| n == "sluice_port_up")
        .filter_map(|(_, l)| {
            let get = |k: &str| l.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone());
            Some((get("port")?, get("name")?))
        })
        .collect();
    let mut ports: Vec<&String> = names.keys().collect();
    ports.sort_by_key(|k| num_key(k));
    let get = |name: &str, k: &str| by(now, name, "port").get(k).copied().unwrap_or(0.0);
    for p in ports {
        let drops = [
            "sluice_port_rx_dropped_total",
            "sluice_port_tx_dropped_total",
            "sluice_port_kernel_rx_dropped_total",
            "sluice_port_device_tx_dropped_total",
            "sluice_port_tx_failed_total",
        ]
        .iter()
        .map(|n| get(n, p))
        .sum::<f64>();
        let errors = get("sluice_port_rx_errors_total", p) + get("sluice_port_tx_errors_total", p);
        o += &format!(
            "{:<6} {:<16} {:>3} {:>12.0} {:>9} {:>12.0} {:>9} {:>8.0} {:>8.0}\n",
            p,
            names[p],
            if get("sluice_port_up", p) > 0.0 { "up" } else { "dn" },
            get("sluice_port_rx_packets_total", p),
            rate("sluice_port_rx_packets_total", "port", p),
            get("sluice_port_tx_packets_total", p),
            rate("sluice_port_tx_packets_total", "port", p),
            drops,
            errors
        );
    }
    o += &format!(
        "\n{:<6} {:>8} {:>14} {:>14} {:>12}\n",
        "TABLE", "FLOWS", "LOOKUPS", "MATCHES", "LOOKUPS/S"
    );
    let flows = by(now, "sluice_table_flows", "table");
    let lookups = by(now, "sluice_table_lookups_total", "table");
    let matches = by(now, "sluice_table_matches_total", "table");
    let mut tables: Vec<&String> = flows.keys().collect();
    tables.sort_by_key(|k| num_key(k));
    let mut quiet = 0;
    for t in tables {
        let (f, l) = (flows[t], lookups.get(t).copied().unwrap_or(0.0));
        if f == 0.0 && l == 0.0 {
            quiet += 1;
            continue;
        }
        o += &format!(
            "{:<6} {:>8.0} {:>14.0} {:>14.0} {:>12}\n",
            t,
            f,
            l,
            matches.get(t).copied().unwrap_or(0.0),
            rate("sluice_table_lookups_total", "table", t)
        );
    }
    if quiet > 0 {
        o += &format!("({quiet} tables without flows or lookups not shown)\n");
    }
    o += &format!(
        "\n{:<6} {:>6} {:>12} {:>12} {:>12} {:>12} {:>9}\n",
        "WORKER", "BUSY%", "EXACT_HIT", "EXACT_MISS", "MEGA_HIT", "MEGA_MISS", "MEGAFLOWS"
    );
    let busy = by(now, "sluice_worker_busy_seconds_total", "worker");
    let mut workers: Vec<&String> = busy.keys().collect();
    workers.sort_by_key(|k| num_key(k));
    for w in workers {
        let cache = |c: &str, r: &str| {
            now.iter()
                .filter(|((n, l), _)| {
                    n == "sluice_cache_lookups_total"
                        && l.contains(&("cache".into(), c.into()))
                        && l.contains(&("result".into(), r.into()))
                        && l.contains(&("worker".into(), w.clone()))
                })
                .map(|(_, v)| *v)
                .sum::<f64>()
        };
        // Busy over the last interval when there is one, else over the
        // worker's life.
        let pct = match prev {
            Some(p) if secs > 0.0 => {
                let d = busy[w]
                    - by(p, "sluice_worker_busy_seconds_total", "worker")
                        .get(w)
                        .copied()
                        .unwrap_or(0.0);
                100.0 * d / secs
            }
            _ => {
                100.0 * by(now, "sluice_worker_busy_ratio", "worker").get(w).copied().unwrap_or(0.0)
            }
        };
        o += &format!(
            "{:<6} {:>6.1} {:>12.0} {:>12.0} {:>12.0} {:>12.0} {:>9.0}\n",
            w,
            pct.clamp(0.0, 100.0),
            cache("exact", "hit"),
            cache("exact", "miss"),
            cache("megaflow", "hit"),
            cache("megaflow", "miss"),
            by(now, "sluice_megaflow_entries", "worker").get(w).copied().unwrap_or(0.0)
        );
    }
    o += &format!(
        "\nupcall queue {:.0}/{:.0}, dropped {:.0}\n",
        one(now, "sluice_upcall_queue_depth"),
        one(now, "sluice_upcall_queue_capacity"),
        one(now, "sluice_upcall_dropped_total")
    );
    for (t, up) in by(now, "sluice_controller_up", "target") {
        o += &format!("controller {t}: {}\n", if up > 0.0 { "up" } else { "down" });
    }
    for ((n, l), _) in now.iter().filter(|((n, _), _)| n == "sluice_openflow_connection_role") {
        let _ = n;
        let get = |k: &str| l.iter().find(|(x, _)| x == k).map_or("", |(_, v)| v.as_str());
        o += &format!(
            "connection {} from {} ({}): role {}\n",
            get("conn"),
            get("peer"),
            get("target"),
            get("role")
        );
    }
    o
}

pub fn run(a: Args) -> Result<()> {
    if !(a.interval > 0.0 && a.interval <= 3600.0) {
        bail!("--interval {}: expected seconds in (0, 3600]", a.interval);
    }
    let every = Duration::from_secs_f64(a.interval);
    let mut prev: Option<(Scrape, Instant)> = None;
    if a.once {
        let first = scrape(&a.addr)?;
        let t0 = Instant::now();
        std::thread::sleep(every);
        let now = scrape(&a.addr)?;
        print!("{}", frame(&a.addr, &now, Some(&first), t0.elapsed().as_secs_f64()));
        return Ok(());
    }
    let mut shown = 0u64;
    loop {
        let now = scrape(&a.addr)?;
        let at = Instant::now();
        let text = match &prev {
            Some((p, t)) => frame(&a.addr, &now, Some(p), at.duration_since(*t).as_secs_f64()),
            None => frame(&a.addr, &now, None, 0.0),
        };
        // Home, clear, then the frame.
        print!("\x1b[H\x1b[2J{text}");
        std::io::stdout().flush()?;
        shown += 1;
        if a.frames.is_some_and(|n| shown >= n) {
            return Ok(());
        }
        prev = Some((now, at));
        std::thread::sleep(every);
    }
}
