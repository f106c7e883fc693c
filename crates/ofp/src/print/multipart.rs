//! Multipart request and reply bodies, printed as ovs-ofctl prints its
//! `OFPST_*` messages (one line per flow, port, group, meter or table).

use super::actions::{action_bitmap, group, group_id, instructions, meter, meter_id};
use super::fields::{match_str, ovs_match, port};
use super::{duration, hex_dump, port_desc};
use crate::consts::{port_no, queue_id, table_id};
use crate::multipart::stats::{
    FlowStats, FlowStatsRequest, GroupFeatures, MeterFeatures, TableStats,
};
use crate::multipart::{MultipartExperimenter, MultipartReplyBody, MultipartRequestBody};
use core::fmt::Write;

/// `OFPST_*` name of a multipart type, as ovs-ofctl writes it.
pub fn request_name(b: &MultipartRequestBody) -> &'static str {
    use MultipartRequestBody as B;
    match b {
        B::Desc => "OFPST_DESC",
        B::Flow(_) => "OFPST_FLOW",
        B::Aggregate(_) => "OFPST_AGGREGATE",
        B::Table => "OFPST_TABLE",
        B::PortStats { .. } => "OFPST_PORT",
        B::Queue { .. } => "OFPST_QUEUE",
        B::Group { .. } => "OFPST_GROUP",
        B::GroupDesc => "OFPST_GROUP_DESC",
        B::GroupFeatures => "OFPST_GROUP_FEATURES",
        B::Meter { .. } => "OFPST_METER",
        B::MeterConfig { .. } => "OFPST_METER_CONFIG",
        B::MeterFeatures => "OFPST_METER_FEATURES",
        B::TableFeatures(_) => "OFPST_TABLE_FEATURES",
        B::PortDesc => "OFPST_PORT_DESC",
        B::Experimenter(_) => "OFPST_EXPERIMENTER",
    }
}

pub fn reply_name(b: &MultipartReplyBody) -> &'static str {
    use MultipartReplyBody as B;
    match b {
        B::Desc(_) => "OFPST_DESC",
        B::Flow(_) => "OFPST_FLOW",
        B::Aggregate(_) => "OFPST_AGGREGATE",
        B::Table(_) => "OFPST_TABLE",
        B::PortStats(_) => "OFPST_PORT",
        B::Queue(_) => "OFPST_QUEUE",
        B::Group(_) => "OFPST_GROUP",
        B::GroupDesc(_) => "OFPST_GROUP_DESC",
        B::GroupFeatures(_) => "OFPST_GROUP_FEATURES",
        B::Meter(_) => "OFPST_METER",
        B::MeterConfig(_) => "OFPST_METER_CONFIG",
        B::MeterFeatures(_) => "OFPST_METER_FEATURES",
        B::TableFeatures(_) => "OFPST_TABLE_FEATURES",
        B::PortDesc(_) => "OFPST_PORT_DESC",
        B::Experimenter(_) => "OFPST_EXPERIMENTER",
    }
}

fn table(t: u8) -> String {
    if t == table_id::ALL {
        "ALL".into()
    } else {
        t.to_string()
    }
}

fn flow_request(r: &FlowStatsRequest) -> String {
    let mut t = Vec::new();
    if r.table_id != table_id::ALL {
        t.push(format!("table={}", r.table_id));
    }
    if r.out_port != port_no::ANY {
        t.push(format!("out_port={}", port(r.out_port)));
    }
    if r.out_group != crate::consts::group_id::ANY {
        t.push(format!("out_group={}", group_id(r.out_group)));
    }
    if r.cookie_mask != 0 {
        t.push(format!("cookie=0x{:x}/0x{:x}", r.cookie, r.cookie_mask));
    }
    let m = match_str(&r.match_);
    if !m.is_empty() {
        t.push(m);
    }
    if t.is_empty() {
        String::new()
    } else {
        format!(" {}", t.join(" "))
    }
}

/// sluice's `DUMP_MAP` decoded ([`super::filterprog`]), any other
/// experimenter body as id, subtype and hex dump.
fn experimenter(e: &MultipartExperimenter, reply: bool) -> String {
    if let Some(s) = super::filterprog::multipart(e, reply) {
        return s;
    }
    let mut s = format!(" experimenter=0x{:08x} exp_type={}", e.experimenter, e.exp_type);
    if !e.data.is_empty() {
        s.push('\n');
        s.push_str(&hex_dump(&e.data));
    }
    s
}

/// Everything after `OFPST_X request (OF1.3) (xid=0x..):`.
pub fn request_body(b: &MultipartRequestBody) -> String {
    use MultipartRequestBody as B;
    match b {
        B::Desc | B::Table | B::GroupDesc | B::GroupFeatures | B::MeterFeatures | B::PortDesc => {
            String::new()
        }
        B::Flow(r) | B::Aggregate(r) => flow_request(r),
        B::PortStats { port_no } => format!(" port_no={}", port(*port_no)),
        B::Queue { port_no, queue_id: q } => {
            let qs = if *q == queue_id::ALL { "ALL".to_string() } else { q.to_string() };
            format!(" port={} queue={qs}", port(*port_no))
        }
        B::Group { group_id: g } => format!(" group_id={}", group_id(*g)),
        B::Meter { meter_id: m } | B::MeterConfig { meter_id: m } => {
            format!(" meter={}", meter_id(*m))
        }
        B::TableFeatures(tables) => super::table_features::message_body(tables),
        B::Experimenter(e) => experimenter(e, false),
    }
}

fn flow_stats(f: &FlowStats) -> String {
    let mut s = format!(
        " cookie=0x{:x}, duration={}, table={}, n_packets={}, n_bytes={}, ",
        f.cookie,
        duration(f.duration_sec, f.duration_nsec),
        f.table_id,
        f.packet_count,
        f.byte_count
    );
    if f.idle_timeout != 0 {
        let _ = write!(s, "idle_timeout={}, ", f.idle_timeout);
    }
    if f.hard_timeout != 0 {
        let _ = write!(s, "hard_timeout={}, ", f.hard_timeout);
    }
    let flags = super::flow_mod_flags(f.flags);
    if !flags.is_empty() {
        s.push_str(&flags.join(" "));
        s.push(' ');
    }
    // As ovs-ofctl: the default priority is left out, and so is the space
    // after an empty match.
    let m = ovs_match(f.priority, &f.match_);
    if !m.is_empty() {
        s.push_str(&m);
        s.push(' ');
    }
    let _ = write!(s, "actions={}", instructions(&f.instructions));
    s
}

fn group_features(g: &GroupFeatures) -> String {
    let mut s = String::from("\n Group table:");
    let _ = write!(s, "\n    Types:  0x{:x}\n    Capabilities:  0x{:x}", g.types, g.capabilities);
    for (i, name) in ["all", "select", "indirect", "fast failover"].iter().enumerate() {
        if g.types & (1 << i) != 0 {
            let _ = write!(
                s,
                "\n    {name} group:\n       max_groups=0x{:x}\n       actions: {}",
                g.max_groups[i],
                action_bitmap(g.actions[i])
            );
        }
    }
    s
}

fn meter_features(m: &MeterFeatures) -> String {
    let bands: Vec<&str> = [(1u32, "drop"), (2, "dscp_remark")]
        .iter()
        .filter(|(b, _)| m.band_types & (1 << b) != 0)
        .map(|(_, n)| *n)
        .collect();
    let caps: Vec<&str> = [(0u32, "kbps"), (1, "pktps"), (2, "burst"), (3, "stats")]
        .iter()
        .filter(|(b, _)| m.capabilities & (1 << b) != 0)
        .map(|(_, n)| *n)
        .collect();
    format!(
        "\nmax_meter:{} max_bands:{} max_color:{}\nband_types: {}\ncapabilities: {}",
        m.max_meter,
        m.max_bands,
        m.max_color,
        bands.join(" "),
        caps.join(" ")
    )
}

/// Everything after `OFPST_X reply (OF1.3) (xid=0x..):`.
pub fn reply_body(b: &MultipartReplyBody) -> String {
    use MultipartReplyBody as B;
    let mut s = String::new();
    match b {
        B::Desc(d) => {
            let _ = write!(
                s,
                "\nManufacturer: {}\nHardware: {}\nSoftware: {}\nSerial Num: {}\nDP Description: {}",
                d.mfr_desc, d.hw_desc, d.sw_desc, d.serial_num, d.dp_desc
            );
        }
        B::Flow(flows) => {
            for f in flows {
                s.push('\n');
                s.push_str(&flow_stats(f));
            }
        }
        B::Aggregate(a) => {
            let _ = write!(
                s,
                " packet_count={} byte_count={} flow_count={}",
                a.packet_count, a.byte_count, a.flow_count
            );
        }
        B::Table(tables) => {
            // As ovs-ofctl (lib/ofp-table.c): a table whose counters equal
            // the previous table's is not printed but joins a run of
            // "ditto" tables, printed as one line where the run ends.
            let counters = |t: &TableStats| (t.active_count, t.lookup_count, t.matched_count);
            let ditto = |s: &mut String, run: Option<(u8, u8)>| match run {
                Some((a, b)) if a == b => {
                    let _ = write!(s, "\n  table {a}: ditto\n");
                }
                Some((a, b)) => {
                    let _ = write!(s, "\n  tables {a}...{b}: ditto\n");
                }
                None => {}
            };
            let mut run: Option<(u8, u8)> = None;
            let mut prev: Option<&TableStats> = None;
            for t in tables {
                if prev.is_some_and(|p| counters(p) == counters(t)) {
                    run = Some((run.map_or(t.table_id, |r| r.0), t.table_id));
                    prev = Some(t);
                    continue;
                }
                prev = Some(t);
                ditto(&mut s, run.take());
                let _ = write!(
                    s,
                    "\n  table {}:\n    active={}, lookup={}, matched={}\n",
                    table(t.table_id),
                    t.active_count,
                    t.lookup_count,
                    t.matched_count
                );
            }
            ditto(&mut s, run);
            s.truncate(s.trim_end_matches('\n').len());
        }
        B::PortStats(ports) => {
            let _ = write!(s, " {} ports", ports.len());
            for p in ports {
                let name = port(p.port_no);
                let name = if name.len() < 3 { format!("{name:>2}") } else { name };
                let _ = write!(
                    s,
                    "\n  port {name}: rx pkts={}, bytes={}, drop={}, errs={}, frame={}, over={}, crc={}\n           tx pkts={}, bytes={}, drop={}, errs={}, coll={}",
                    p.rx_packets, p.rx_bytes, p.rx_dropped, p.rx_errors, p.rx_frame_err, p.rx_over_err, p.rx_crc_err,
                    p.tx_packets, p.tx_bytes, p.tx_dropped, p.tx_errors, p.collisions
                );
                if p.duration_sec != u32::MAX {
                    let _ = write!(
                        s,
                        "\n           duration={}",
                        duration(p.duration_sec, p.duration_nsec)
                    );
                }
            }
        }
        B::Queue(queues) => {
            let _ = write!(s, " {} queues", queues.len());
            for q in queues {
                let _ = write!(
                    s,
                    "\n  port {} queue {}: bytes={}, pkts={}, errors={}, duration={}",
                    port(q.port_no),
                    q.queue_id,
                    q.tx_bytes,
                    q.tx_packets,
                    q.tx_errors,
                    duration(q.duration_sec, q.duration_nsec)
                );
            }
        }
        B::Group(groups) => {
            for g in groups {
                let _ = write!(
                    s,
                    "\n group_id={},duration={},ref_count={},packet_count={},byte_count={}",
                    group_id(g.group_id),
                    duration(g.duration_sec, g.duration_nsec),
                    g.ref_count,
                    g.packet_count,
                    g.byte_count
                );
                for (i, b) in g.bucket_stats.iter().enumerate() {
                    let _ = write!(
                        s,
                        ",bucket{i}:packet_count={},byte_count={}",
                        b.packet_count, b.byte_count
                    );
                }
            }
        }
        B::GroupDesc(groups) => {
            for g in groups {
                s.push_str("\n ");
                s.push_str(&group(g.group_id, g.group_type, &g.buckets));
            }
        }
        B::GroupFeatures(g) => s.push_str(&group_features(g)),
        // ovs-ofctl ends each meter with a newline and starts each with
        // one: a blank line between meters.
        B::Meter(meters) => {
            for (n, m) in meters.iter().enumerate() {
                if n > 0 {
                    s.push('\n');
                }
                let _ = write!(
                    s,
                    "\nmeter:{} flow_count:{} packet_in_count:{} byte_in_count:{} duration:{} bands:",
                    meter_id(m.meter_id),
                    m.flow_count,
                    m.packet_in_count,
                    m.byte_in_count,
                    duration(m.duration_sec, m.duration_nsec)
                );
                for (i, b) in m.band_stats.iter().enumerate() {
                    let _ = write!(
                        s,
                        "\n{i}: packet_count:{} byte_count:{}",
                        b.packet_band_count, b.byte_band_count
                    );
                }
            }
        }
        B::MeterConfig(meters) => {
            for (n, m) in meters.iter().enumerate() {
                if n > 0 {
                    s.push('\n');
                }
                s.push('\n');
                s.push_str(&meter(m.meter_id, m.flags, &m.bands));
            }
        }
        B::MeterFeatures(m) => s.push_str(&meter_features(m)),
        B::TableFeatures(tables) => s.push_str(&super::table_features::message_body(tables)),
        B::PortDesc(ports) => {
            for p in ports {
                s.push('\n');
                s.push_str(&port_desc(p));
            }
        }
        B::Experimenter(e) => s.push_str(&experimenter(e, true)),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meter::{flags as meter_flags, MeterBand};
    use crate::multipart::stats::MeterConfig;

    #[test]
    fn equal_tables_are_ditto_as_in_ovs_ofctl() {
        let t = |table_id, active_count| TableStats {
            table_id,
            active_count,
            lookup_count: 0,
            matched_count: 0,
        };
        let mut v = vec![t(0, 41), t(1, 36), t(2, 0)];
        v.extend((3..=253).map(|n| t(n, 0)));
        // ovs-ofctl 3.1's dump-tables of Open vSwitch with these counters.
        assert_eq!(
            reply_body(&MultipartReplyBody::Table(v)),
            "\n  table 0:\n    active=41, lookup=0, matched=0\n\
             \n  table 1:\n    active=36, lookup=0, matched=0\n\
             \n  table 2:\n    active=0, lookup=0, matched=0\n\
             \n  tables 3...253: ditto"
        );
        let one = vec![t(0, 1), t(1, 0), t(2, 0), t(3, 5)];
        assert_eq!(
            reply_body(&MultipartReplyBody::Table(one)),
            "\n  table 0:\n    active=1, lookup=0, matched=0\n\
             \n  table 1:\n    active=0, lookup=0, matched=0\n\
             \n  table 2: ditto\n\
             \n  table 3:\n    active=5, lookup=0, matched=0"
        );
    }

    #[test]
    fn meters_are_separated_by_a_blank_line_and_burst_needs_the_flag() {
        let m = |meter_id, flags| MeterConfig {
            flags,
            meter_id,
            bands: vec![MeterBand::Drop { rate: 1000, burst_size: 1000 }],
        };
        let all = meter_flags::KBPS | meter_flags::BURST | meter_flags::STATS;
        assert_eq!(
            reply_body(&MultipartReplyBody::MeterConfig(vec![m(1, meter_flags::KBPS), m(3, all)])),
            "\nmeter=1 kbps bands=\ntype=drop rate=1000\n\
             \nmeter=3 kbps burst stats bands=\ntype=drop rate=1000 burst_size=1000"
        );
    }
}
