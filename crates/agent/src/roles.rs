//! Controller roles, generation ids, asynchronous-message filters and the
//! packet-in token bucket (OpenFlow 1.3.5 §6.3.6, §7.3.9, §7.3.10).
//!
//! Pure state machines: no sockets, no clocks (the token bucket takes the
//! time as an argument), so every rule here has a unit test.
//!
//! ## Roles (§6.3.6)
//! - Every connection starts as EQUAL.
//! - `NOCHANGE` only queries. `EQUAL` is always granted and ignores
//!   `generation_id`.
//! - `MASTER` and `SLAVE` carry a `generation_id`. If one was seen before
//!   and `(int64)(generation_id - cached) < 0` (wrapping comparison, as the
//!   spec writes it), the request fails with `OFPRRFC_STALE`; otherwise the
//!   id is cached.
//! - Granting MASTER turns every other MASTER into SLAVE (1.3 has no
//!   ROLE_STATUS message, so they are not told).
//! - Any other role value is `OFPRRFC_BAD_ROLE`.
//! - The reply carries the connection's role and the cached generation id
//!   (0 if none has been seen).
//!
//! ## Slave restrictions
//! A SLAVE may not change switch state: PACKET_OUT, FLOW_MOD, GROUP_MOD,
//! PORT_MOD, TABLE_MOD and TABLE_FEATURES multipart requests with a
//! non-empty body are refused with `OFPBRC_IS_SLAVE` (the spec's list), and
//! so is METER_MOD (meters are switch state exactly as groups are; Open
//! vSwitch refuses it too), and so are the experimenter messages that
//! change state: bundle control and bundle add (ONF extension 230, as Open
//! vSwitch refuses them) and sluice's filter-program load, unload and map
//! update (a map dump is a query). SET_ASYNC (a slave picks its own messages),
//! SET_CONFIG (not in the spec's list), queries, statistics, echo and
//! barriers stay allowed.
//!
//! ## Async filters (§7.3.10)
//! Each connection has an [`AsyncConfig`]: index 0 applies while MASTER or
//! EQUAL, index 1 while SLAVE; bit `1 << reason` enables a reason. The
//! defaults are the spec's: masters and equals get packet-ins for
//! NO_MATCH and ACTION (not INVALID_TTL), every port-status and every
//! flow-removed reason; slaves get port-status only.

use std::collections::BTreeMap;

use sluice_ofp::bundle;
use sluice_ofp::consts::SLUICE_EXPERIMENTER_ID;
use sluice_ofp::error::ErrorCode;
use sluice_ofp::filterprog::exp_type as fp;
use sluice_ofp::message::{controller_role as role, AsyncConfig, Message, RoleMsg};
use sluice_ofp::multipart::MultipartRequestBody;

/// Identifies one controller connection for the life of an agent.
pub type ConnId = u64;

/// The spec's default [`AsyncConfig`] (see the module docs).
pub fn default_async_config() -> AsyncConfig {
    AsyncConfig {
        packet_in_mask: [0b011, 0],
        port_status_mask: [0b111, 0b111],
        flow_removed_mask: [0b1_1111, 0],
    }
}

/// Whether a connection in `role` with filters `cfg` receives the
/// asynchronous message `msg`. Messages that are not PACKET_IN,
/// PORT_STATUS or FLOW_REMOVED are not filtered.
pub fn wants(cfg: &AsyncConfig, conn_role: u32, msg: &Message) -> bool {
    let i = usize::from(conn_role == role::SLAVE);
    let bit = |mask: &[u32; 2], reason: u8| {
        mask.get(i).is_some_and(|m| reason < 32 && m & (1u32 << reason) != 0)
    };
    match msg {
        Message::PacketIn(p) => bit(&cfg.packet_in_mask, p.reason),
        Message::PortStatus(p) => bit(&cfg.port_status_mask, p.reason),
        Message::FlowRemoved(f) => bit(&cfg.flow_removed_mask, f.reason),
        _ => true,
    }
}

/// Whether a SLAVE must be refused `msg` with `OFPBRC_IS_SLAVE`.
pub fn slave_forbidden(msg: &Message) -> bool {
    match msg {
        Message::PacketOut(_)
        | Message::FlowMod(_)
        | Message::GroupMod(_)
        | Message::PortMod(_)
        | Message::TableMod(_)
        | Message::MeterMod(_) => true,
        Message::MultipartRequest(r) => {
            matches!(&r.body, MultipartRequestBody::TableFeatures(v) if !v.is_empty())
        }
        Message::Experimenter(e) => match e.experimenter {
            bundle::ONF_EXPERIMENTER_ID => {
                matches!(e.exp_type, bundle::ONFT_BUNDLE_CONTROL | bundle::ONFT_BUNDLE_ADD_MESSAGE)
            }
            SLUICE_EXPERIMENTER_ID => {
                matches!(e.exp_type, fp::LOAD_FILTER_PROG | fp::UNLOAD_FILTER_PROG | fp::UPDATE_MAP)
            }
            _ => false,
        },
        _ => false,
    }
}

/// Roles of all connections and the cached generation id.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    generation: Option<u64>,
    roles: BTreeMap<ConnId, u32>,
}

impl Roles {
    /// A new connection, as EQUAL.
    pub fn add(&mut self, conn: ConnId) {
        self.roles.insert(conn, role::EQUAL);
    }

    pub fn remove(&mut self, conn: ConnId) {
        self.roles.remove(&conn);
    }

    /// The role of `conn` (EQUAL for an unknown connection).
    pub fn role(&self, conn: ConnId) -> u32 {
        self.roles.get(&conn).copied().unwrap_or(role::EQUAL)
    }

    pub fn generation(&self) -> Option<u64> {
        self.generation
    }

    /// Connections currently MASTER.
    pub fn masters(&self) -> impl Iterator<Item = ConnId> + '_ {
        self.roles.iter().filter(|(_, r)| **r == role::MASTER).map(|(c, _)| *c)
    }

    /// Apply a ROLE_REQUEST from `conn`; the ROLE_REPLY body or the error.
    pub fn request(&mut self, conn: ConnId, req: &RoleMsg) -> Result<RoleMsg, ErrorCode> {
        match req.role {
            role::NOCHANGE => {}
            role::EQUAL => {
                self.roles.insert(conn, role::EQUAL);
            }
            role::MASTER | role::SLAVE => {
                if let Some(cached) = self.generation {
                    if (req.generation_id.wrapping_sub(cached) as i64) < 0 {
                        return Err(ErrorCode::RRFC_STALE);
                    }
                }
                self.generation = Some(req.generation_id);
                if req.role == role::MASTER {
                    for (c, r) in self.roles.iter_mut() {
                        if *c != conn && *r == role::MASTER {
                            *r = role::SLAVE;
                        }
                    }
                }
                self.roles.insert(conn, req.role);
            }
            _ => return Err(ErrorCode::RRFC_BAD_ROLE),
        }
        Ok(RoleMsg { role: self.role(conn), generation_id: self.generation.unwrap_or(0) })
    }
}

/// Token bucket with nanosecond time supplied by the caller.
#[derive(Clone, Debug)]
pub struct TokenBucket {
    rate: u64,
    burst: u64,
    /// Tokens scaled by 1e9 (one token = 1e9 units), so refills are exact.
    units: u64,
    last_ns: u64,
}

const UNIT: u64 = 1_000_000_000;

impl TokenBucket {
    /// `rate` tokens per second, at most `burst` saved (at least 1);
    /// starts full. `rate == 0` means unlimited.
    pub fn new(rate: u32, burst: u32, now_ns: u64) -> Self {
        let burst = u64::from(burst.max(1));
        TokenBucket { rate: u64::from(rate), burst, units: burst * UNIT, last_ns: now_ns }
    }

    /// Take one token at time `now_ns`; `false` if none is left.
    pub fn take(&mut self, now_ns: u64) -> bool {
        if self.rate == 0 {
            return true;
        }
        let dt = now_ns.saturating_sub(self.last_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let add = dt.saturating_mul(self.rate);
        self.units = self.units.saturating_add(add).min(self.burst * UNIT);
        if self.units >= UNIT {
            self.units -= UNIT;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_ofp::message::{FlowRemoved, PacketIn, PortStatus};
    use sluice_ofp::multipart::MultipartRequest;

    fn rm(role: u32, generation_id: u64) -> RoleMsg {
        RoleMsg { role, generation_id }
    }

    #[test]
    fn starts_equal_and_nochange_queries() {
        let mut r = Roles::default();
        r.add(1);
        assert_eq!(r.role(1), role::EQUAL);
        assert_eq!(r.request(1, &rm(role::NOCHANGE, 99)), Ok(rm(role::EQUAL, 0)));
        assert_eq!(r.generation(), None);
    }

    #[test]
    fn master_demotes_other_masters() {
        let mut r = Roles::default();
        for c in 1..=3 {
            r.add(c);
        }
        assert_eq!(r.request(1, &rm(role::MASTER, 5)), Ok(rm(role::MASTER, 5)));
        assert_eq!(r.request(2, &rm(role::MASTER, 6)), Ok(rm(role::MASTER, 6)));
        assert_eq!(r.role(1), role::SLAVE);
        assert_eq!(r.role(3), role::EQUAL);
        assert_eq!(r.masters().collect::<Vec<_>>(), vec![2]);
        // Same generation is not stale.
        assert_eq!(r.request(1, &rm(role::MASTER, 6)), Ok(rm(role::MASTER, 6)));
        assert_eq!(r.role(2), role::SLAVE);
    }

    #[test]
    fn stale_generation_is_refused() {
        let mut r = Roles::default();
        r.add(1);
        r.add(2);
        r.request(1, &rm(role::MASTER, 10)).unwrap();
        assert_eq!(r.request(2, &rm(role::MASTER, 9)), Err(ErrorCode::RRFC_STALE));
        assert_eq!(r.request(2, &rm(role::SLAVE, 9)), Err(ErrorCode::RRFC_STALE));
        assert_eq!(r.role(1), role::MASTER);
        assert_eq!(r.role(2), role::EQUAL);
        // EQUAL ignores the generation id.
        assert_eq!(r.request(2, &rm(role::EQUAL, 0)), Ok(rm(role::EQUAL, 10)));
    }

    #[test]
    fn generation_comparison_wraps() {
        let mut r = Roles::default();
        r.add(1);
        r.request(1, &rm(role::SLAVE, u64::MAX - 1)).unwrap();
        // 1 - (MAX-1) = 3 as i64 > 0: newer.
        assert_eq!(r.request(1, &rm(role::MASTER, 1)), Ok(rm(role::MASTER, 1)));
        // (MAX-1) - 1 is negative as i64: stale.
        assert_eq!(r.request(1, &rm(role::MASTER, u64::MAX - 1)), Err(ErrorCode::RRFC_STALE));
    }

    #[test]
    fn bad_role() {
        let mut r = Roles::default();
        r.add(1);
        assert_eq!(r.request(1, &rm(4, 0)), Err(ErrorCode::RRFC_BAD_ROLE));
    }

    #[test]
    fn default_filters() {
        let c = default_async_config();
        let pin = |reason| Message::PacketIn(PacketIn { reason, ..Default::default() });
        let ps = |reason| Message::PortStatus(PortStatus { reason, ..Default::default() });
        let fr = |reason| Message::FlowRemoved(FlowRemoved { reason, ..Default::default() });
        for r in [role::EQUAL, role::MASTER] {
            assert!(wants(&c, r, &pin(0)) && wants(&c, r, &pin(1)) && !wants(&c, r, &pin(2)));
            assert!((0..3).all(|x| wants(&c, r, &ps(x))));
            assert!((0..5).all(|x| wants(&c, r, &fr(x))));
        }
        let s = role::SLAVE;
        assert!(!wants(&c, s, &pin(0)) && !wants(&c, s, &pin(1)));
        assert!((0..3).all(|x| wants(&c, s, &ps(x))));
        assert!(!wants(&c, s, &fr(0)));
        assert!(!wants(&c, role::MASTER, &pin(200)));
        assert!(wants(&c, s, &Message::BarrierReply));
    }

    #[test]
    fn custom_filters() {
        let c = AsyncConfig {
            packet_in_mask: [0, 1 << 2],
            port_status_mask: [1 << 1, 0],
            flow_removed_mask: [0, 1],
        };
        let pin = Message::PacketIn(PacketIn { reason: 2, ..Default::default() });
        assert!(!wants(&c, role::MASTER, &pin));
        assert!(wants(&c, role::SLAVE, &pin));
        let ps = Message::PortStatus(PortStatus { reason: 1, ..Default::default() });
        assert!(wants(&c, role::EQUAL, &ps));
        assert!(!wants(&c, role::SLAVE, &ps));
    }

    #[test]
    fn slave_writes() {
        use sluice_ofp::message::*;
        assert!(slave_forbidden(&Message::FlowMod(FlowMod::default())));
        assert!(slave_forbidden(&Message::PacketOut(PacketOut::default())));
        assert!(slave_forbidden(&Message::PortMod(PortMod::default())));
        assert!(slave_forbidden(&Message::TableMod(TableMod::default())));
        assert!(slave_forbidden(&Message::MeterMod(MeterMod::default())));
        assert!(!slave_forbidden(&Message::BarrierRequest));
        assert!(!slave_forbidden(&Message::SetAsync(AsyncConfig::default())));
        assert!(!slave_forbidden(&Message::FeaturesRequest));
        let tf = |v| {
            Message::MultipartRequest(MultipartRequest {
                flags: 0,
                body: MultipartRequestBody::TableFeatures(v),
            })
        };
        assert!(!slave_forbidden(&tf(vec![])));
        let one = sluice_ofp::multipart::TableFeatures {
            table_id: 0,
            name: String::new(),
            metadata_match: 0,
            metadata_write: 0,
            config: 0,
            max_entries: 1,
            properties: vec![],
        };
        assert!(slave_forbidden(&tf(vec![one])));
    }

    #[test]
    fn token_bucket() {
        let s = 1_000_000_000u64;
        let mut b = TokenBucket::new(10, 3, 0);
        assert!(b.take(0) && b.take(0) && b.take(0));
        assert!(!b.take(0));
        // 100 ms = one token at 10/s.
        assert!(!b.take(s / 20));
        assert!(b.take(s / 10));
        assert!(!b.take(s / 10));
        // A long pause refills only up to the burst.
        let t = 100 * s;
        assert!(b.take(t) && b.take(t) && b.take(t));
        assert!(!b.take(t));
        // Time going backwards never adds tokens.
        assert!(!b.take(0));
        let mut unlimited = TokenBucket::new(0, 0, 0);
        assert!((0..1000).all(|_| unlimited.take(0)));
    }
}
