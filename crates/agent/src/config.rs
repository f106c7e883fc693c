//! Agent configuration: connection targets in Open vSwitch's syntax
//! (`tcp:IP:PORT`, `ssl:IP:PORT`, `ptcp:PORT[:IP]`, `pssl:PORT[:IP]`),
//! TLS files, timers, queue bounds, packet-in rate limit and fail mode.
//!
//! Everything here is plain data with a parser; nothing opens a socket.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Default OpenFlow port (IANA).
pub const OFP_TCP_PORT: u16 = 6653;

/// Transport of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    Tcp,
    /// TLS with peer verification both ways ([`TlsFiles`] must be set).
    Ssl,
}

/// Where to connect (active) or listen (passive).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub transport: Transport,
    /// `true` for `ptcp:`/`pssl:` (we listen), `false` for `tcp:`/`ssl:`.
    pub passive: bool,
    pub addr: SocketAddr,
}

/// Why a target string was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad connection target {target:?}: {why}")]
pub struct TargetError {
    pub target: String,
    pub why: &'static str,
}

impl FromStr for Target {
    type Err = TargetError;

    /// `tcp:IP[:PORT]`, `ssl:IP[:PORT]` (active; port defaults to 6653),
    /// `ptcp:[PORT][:IP]`, `pssl:[PORT][:IP]` (passive; port defaults to
    /// 6653, IP to 0.0.0.0). IPv6 addresses go in brackets: `tcp:[::1]:6653`,
    /// `ptcp:6653:[::1]`.
    fn from_str(s: &str) -> Result<Target, TargetError> {
        let err = |why| TargetError { target: s.to_string(), why };
        let (scheme, rest) = s.split_once(':').ok_or_else(|| err("missing ':'"))?;
        let (transport, passive) = match scheme {
            "tcp" => (Transport::Tcp, false),
            "ssl" => (Transport::Ssl, false),
            "ptcp" => (Transport::Tcp, true),
            "pssl" => (Transport::Ssl, true),
            _ => return Err(err("scheme must be tcp, ssl, ptcp or pssl")),
        };
        let addr = if passive {
            let (port, ip) = match rest.split_once(':') {
                Some((p, ip)) => (p, Some(ip)),
                None => (rest, None),
            };
            let port = if port.is_empty() {
                OFP_TCP_PORT
            } else {
                port.parse().map_err(|_| err("bad port"))?
            };
            let ip = match ip {
                Some(ip) => parse_ip(ip).ok_or_else(|| err("bad IP address"))?,
                None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            };
            SocketAddr::new(ip, port)
        } else {
            let (ip, port) = split_host_port(rest).ok_or_else(|| err("bad IP address"))?;
            let port = match port {
                Some(p) => p.parse().map_err(|_| err("bad port"))?,
                None => OFP_TCP_PORT,
            };
            SocketAddr::new(ip, port)
        };
        Ok(Target { transport, passive, addr })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match (self.passive, self.transport) {
            (false, Transport::Tcp) => "tcp",
            (false, Transport::Ssl) => "ssl",
            (true, Transport::Tcp) => "ptcp",
            (true, Transport::Ssl) => "pssl",
        };
        let ip = match self.addr.ip() {
            IpAddr::V4(a) => a.to_string(),
            IpAddr::V6(a) => format!("[{a}]"),
        };
        if self.passive {
            write!(f, "{scheme}:{}:{ip}", self.addr.port())
        } else {
            write!(f, "{scheme}:{ip}:{}", self.addr.port())
        }
    }
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    let s = s.strip_prefix('[').and_then(|x| x.strip_suffix(']')).unwrap_or(s);
    s.parse().ok()
}

/// `IP[:PORT]` or `[IPv6][:PORT]`.
fn split_host_port(s: &str) -> Option<(IpAddr, Option<&str>)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            a => Some(a.strip_prefix(':')?),
        };
        return Some((ip.parse().ok()?, port));
    }
    match s.split_once(':') {
        Some((ip, port)) => Some((ip.parse().ok()?, Some(port))),
        None => Some((s.parse().ok()?, None)),
    }
}

/// PEM files for TLS (`ssl:` and `pssl:` targets). Both directions are
/// verified: the peer's certificate must chain to `ca`, and we present
/// `cert`/`key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// CA certificate(s) the peer's certificate must chain to.
    pub ca: PathBuf,
    /// Our certificate chain.
    pub cert: PathBuf,
    /// Our private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// What the switch does while no controller is connected (OVS
/// `fail_mode`). The agent only reports the state; the daemon acts on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum FailMode {
    /// Keep the flow table; table misses are dropped.
    #[default]
    Secure,
    /// Behave as a MAC-learning switch until a controller connects.
    Standalone,
}

impl FromStr for FailMode {
    type Err = TargetError;
    fn from_str(s: &str) -> Result<FailMode, TargetError> {
        match s {
            "secure" => Ok(FailMode::Secure),
            "standalone" => Ok(FailMode::Standalone),
            _ => {
                Err(TargetError { target: s.into(), why: "fail mode must be secure or standalone" })
            }
        }
    }
}

/// Packet-in token bucket: `rate` packets per second on average, bursts of
/// up to `burst`. `rate == 0` disables the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub rate: u32,
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        // Open vSwitch's controller_rate_limit default is 1000/s, burst 100.
        RateLimit { rate: 1000, burst: 100 }
    }
}

/// Everything the agent needs to know.
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Passive (`ptcp:`/`pssl:`) and active (`tcp:`/`ssl:`) targets.
    pub targets: Vec<Target>,
    /// Required if any target is `ssl:`/`pssl:`.
    pub tls: Option<TlsFiles>,
    /// Inactivity probe: after this long with nothing received, send an
    /// ECHO_REQUEST; after as long again with nothing received, drop the
    /// connection. Also bounds the HELLO exchange.
    pub probe_interval: Duration,
    /// Reconnect backoff for active targets: starts at `backoff_min`,
    /// doubles after each failure up to `backoff_max`; reset after a
    /// connection that completed the HELLO exchange.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// TCP connect / TLS handshake bound.
    pub connect_timeout: Duration,
    /// Outbound queue per connection, in messages.
    pub queue_len: usize,
    /// Packet-in limit per connection.
    pub packet_in_limit: RateLimit,
    /// Passive connections accepted at once (per listener).
    pub max_passive_conns: usize,
    /// Whether connections accepted on passive targets count as
    /// controllers for [`FailMode`] (`ovs-ofctl` sessions should not).
    pub passive_counts_as_controller: bool,
    pub fail_mode: FailMode,
    /// How often the core polls [`crate::Switch::take_async`] even if
    /// nobody called [`crate::AsyncNotifier::notify`].
    pub async_poll: Duration,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            targets: Vec::new(),
            tls: None,
            probe_interval: Duration::from_secs(5),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(8),
            connect_timeout: Duration::from_secs(5),
            queue_len: 1024,
            packet_in_limit: RateLimit::default(),
            max_passive_conns: 64,
            passive_counts_as_controller: false,
            fail_mode: FailMode::Secure,
            async_poll: Duration::from_millis(100),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Target {
        s.parse().unwrap()
    }

    #[test]
    fn parse_targets() {
        assert_eq!(
            t("tcp:127.0.0.1:6633"),
            Target {
                transport: Transport::Tcp,
                passive: false,
                addr: "127.0.0.1:6633".parse().unwrap()
            }
        );
        assert_eq!(t("ssl:127.0.0.1").addr, "127.0.0.1:6653".parse().unwrap());
        assert_eq!(t("ssl:127.0.0.1").transport, Transport::Ssl);
        assert_eq!(t("ptcp:6654").addr, "0.0.0.0:6654".parse().unwrap());
        assert!(t("ptcp:6654").passive);
        assert_eq!(t("ptcp:6654:127.0.0.1").addr, "127.0.0.1:6654".parse().unwrap());
        assert_eq!(t("ptcp:").addr, "0.0.0.0:6653".parse().unwrap());
        assert_eq!(t("pssl:0:[::1]").addr, "[::1]:0".parse().unwrap());
        assert_eq!(t("tcp:[::1]:7").addr, "[::1]:7".parse().unwrap());
        assert_eq!(t("tcp:[::1]").addr, "[::1]:6653".parse().unwrap());
    }

    #[test]
    fn reject_bad_targets() {
        for s in
            ["", "tcp", "udp:1.2.3.4:5", "tcp:host:1", "ptcp:x", "tcp:1.2.3.4:70000", "tcp:[::1"]
        {
            assert!(s.parse::<Target>().is_err(), "{s}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in ["tcp:127.0.0.1:6633", "ssl:[::1]:6653", "ptcp:6654:127.0.0.1", "pssl:1:[::1]"] {
            assert_eq!(t(s).to_string(), s);
            assert_eq!(t(&t(s).to_string()), t(s));
        }
    }

    #[test]
    fn fail_mode() {
        assert_eq!("secure".parse::<FailMode>().unwrap(), FailMode::Secure);
        assert_eq!("standalone".parse::<FailMode>().unwrap(), FailMode::Standalone);
        assert!("open".parse::<FailMode>().is_err());
    }
}
