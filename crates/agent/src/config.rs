//! Agent configuration: connection targets in Open vSwitch's syntax
//! (`tcp:IP:PORT`, `ssl:IP:PORT`, `ptcp:PORT[:IP]`, `pssl:PORT[:IP]`,
//! `punix:PATH`), TLS files, timers, queue bounds, packet-in rate limit and
//! fail mode.
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
    /// Plain OpenFlow on a unix-domain stream socket (`punix:PATH`, passive
    /// only: the local control socket `sluice ctl` finds by itself). Who
    /// may connect is decided by the socket file's mode.
    Unix,
}

/// The address of a target or a peer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `Tcp` and `Ssl` targets, and every TCP peer.
    Inet(SocketAddr),
    /// `Unix` targets. A peer on a unix socket is named by the path it
    /// connected to (clients of a listening socket are unnamed).
    Unix(PathBuf),
}

impl Endpoint {
    /// The IP address and port, if this is one.
    pub fn inet(&self) -> Option<SocketAddr> {
        match self {
            Endpoint::Inet(a) => Some(*a),
            Endpoint::Unix(_) => None,
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Inet(a) => write!(f, "{a}"),
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Where to connect (active) or listen (passive). `transport` and `addr`
/// agree (`Unix` with [`Endpoint::Unix`], the others with
/// [`Endpoint::Inet`]); [`Target::check`] says whether they do, and the
/// parser only makes targets that pass it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    pub transport: Transport,
    /// `true` for `ptcp:`/`pssl:`/`punix:` (we listen), `false` for
    /// `tcp:`/`ssl:`.
    pub passive: bool,
    pub addr: Endpoint,
}

impl Target {
    /// Whether the agent can serve this target: the transport matches the
    /// address, and a unix socket is only listened on.
    pub fn check(&self) -> Result<(), &'static str> {
        match (self.transport, &self.addr, self.passive) {
            (Transport::Unix, Endpoint::Unix(_), true) => Ok(()),
            (Transport::Unix, Endpoint::Unix(_), false) => {
                Err("the switch only listens on unix sockets (punix:PATH)")
            }
            (Transport::Tcp | Transport::Ssl, Endpoint::Inet(_), _) => Ok(()),
            _ => Err("transport and address disagree"),
        }
    }
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
    /// 6653, IP to 0.0.0.0), `punix:PATH` (passive, a unix-domain socket).
    /// IPv6 addresses go in brackets: `tcp:[::1]:6653`, `ptcp:6653:[::1]`.
    fn from_str(s: &str) -> Result<Target, TargetError> {
        let err = |why| TargetError { target: s.to_string(), why };
        let (scheme, rest) = s.split_once(':').ok_or_else(|| err("missing ':'"))?;
        let (transport, passive) = match scheme {
            "tcp" => (Transport::Tcp, false),
            "ssl" => (Transport::Ssl, false),
            "ptcp" => (Transport::Tcp, true),
            "pssl" => (Transport::Ssl, true),
            "punix" if rest.is_empty() => return Err(err("punix: needs a socket path")),
            "punix" if rest.contains('\0') => return Err(err("a socket path has no NUL byte")),
            "punix" => {
                let addr = Endpoint::Unix(PathBuf::from(rest));
                return Ok(Target { transport: Transport::Unix, passive: true, addr });
            }
            "unix" => {
                return Err(err("unix: is for clients such as sluice ctl; a switch listens \
                     with punix:PATH"))
            }
            _ => return Err(err("scheme must be tcp, ssl, ptcp, pssl or punix")),
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
        Ok(Target { transport, passive, addr: Endpoint::Inet(addr) })
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scheme = match (self.passive, self.transport) {
            (false, Transport::Tcp) => "tcp",
            (false, Transport::Ssl) => "ssl",
            (false, Transport::Unix) => "unix",
            (true, Transport::Tcp) => "ptcp",
            (true, Transport::Ssl) => "pssl",
            (true, Transport::Unix) => "punix",
        };
        let addr = match &self.addr {
            Endpoint::Inet(a) => a,
            Endpoint::Unix(p) => return write!(f, "{scheme}:{}", p.display()),
        };
        let ip = match addr.ip() {
            IpAddr::V4(a) => a.to_string(),
            IpAddr::V6(a) => format!("[{a}]"),
        };
        if self.passive {
            write!(f, "{scheme}:{}:{ip}", addr.port())
        } else {
            write!(f, "{scheme}:{ip}:{}", addr.port())
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
/// `cert`/`key`. With `crls`, a peer certificate listed as revoked (or
/// whose issuer has no list among them) is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// CA certificate(s) the peer's certificate must chain to.
    pub ca: PathBuf,
    /// Our certificate chain.
    pub cert: PathBuf,
    /// Our private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Certificate revocation lists (PEM, several per file allowed); empty:
    /// no revocation check.
    pub crls: Vec<PathBuf>,
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
    /// Passive (`ptcp:`/`pssl:`/`punix:`) and active (`tcp:`/`ssl:`) targets.
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
                addr: Endpoint::Inet("127.0.0.1:6633".parse().unwrap())
            }
        );
        assert_eq!(t("ssl:127.0.0.1").addr.inet(), Some("127.0.0.1:6653".parse().unwrap()));
        assert_eq!(t("ssl:127.0.0.1").transport, Transport::Ssl);
        assert_eq!(t("ptcp:6654").addr.inet(), Some("0.0.0.0:6654".parse().unwrap()));
        assert!(t("ptcp:6654").passive);
        assert_eq!(t("ptcp:6654:127.0.0.1").addr.inet(), Some("127.0.0.1:6654".parse().unwrap()));
        assert_eq!(t("ptcp:").addr.inet(), Some("0.0.0.0:6653".parse().unwrap()));
        assert_eq!(t("pssl:0:[::1]").addr.inet(), Some("[::1]:0".parse().unwrap()));
        assert_eq!(t("tcp:[::1]:7").addr.inet(), Some("[::1]:7".parse().unwrap()));
        assert_eq!(t("tcp:[::1]").addr.inet(), Some("[::1]:6653".parse().unwrap()));
    }

    #[test]
    fn reject_bad_targets() {
        for s in [
            "",
            "tcp",
            "udp:1.2.3.4:5",
            "tcp:host:1",
            "ptcp:x",
            "tcp:1.2.3.4:70000",
            "tcp:[::1",
            "punix:",
            "punix:a\0b",
            "unix:/run/x.mgmt",
        ] {
            assert!(s.parse::<Target>().is_err(), "{s}");
        }
        let e = "unix:/x".parse::<Target>().unwrap_err();
        assert!(e.to_string().contains("punix:PATH"), "{e}");
    }

    #[test]
    fn punix_targets() {
        let u = t("punix:/run/sluice/br0.mgmt");
        assert_eq!(u.transport, Transport::Unix);
        assert!(u.passive);
        assert_eq!(u.addr, Endpoint::Unix("/run/sluice/br0.mgmt".into()));
        assert_eq!(u.addr.inet(), None);
        assert_eq!(u.check(), Ok(()));
        assert_eq!(t("punix:rel/x:y").addr, Endpoint::Unix("rel/x:y".into()));
        let active = Target { passive: false, ..u.clone() };
        assert!(active.check().is_err());
        let mixed = Target { transport: Transport::Tcp, ..u };
        assert!(mixed.check().is_err());
        assert_eq!(t("ptcp:1").check(), Ok(()));
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "tcp:127.0.0.1:6633",
            "ssl:[::1]:6653",
            "ptcp:6654:127.0.0.1",
            "pssl:1:[::1]",
            "punix:/run/sluice/br0.mgmt",
        ] {
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
