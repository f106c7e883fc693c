//! The `ovs-ofctl` text syntax for flows, groups, meters and actions.
//!
//! ovs-ofctl's syntax is the lingua franca for writing flows, so sluice reads
//! it (for `sluice ctl`, `replay`, `trace` and flow files) and the printer
//! writes it. What is accepted:
//!
//! - **Flows** (`add-flow`, `mod-flows`, `del-flows`): `key=value` pairs and
//!   shorthands separated by commas or spaces, then `actions=...` (or
//!   `instructions` written as actions, see below) last.
//!   - flow keys: `table`, `priority`, `cookie` (`value[/mask]`, the mask only
//!     for modify/delete), `idle_timeout`, `hard_timeout`, `out_port`,
//!     `out_group`, and the flags `send_flow_rem`, `check_overlap`,
//!     `reset_counts`, `no_packet_counts`, `no_byte_counts`;
//!   - shorthands: `eth`, `ip`, `ipv6`, `icmp`, `icmp6`, `tcp`, `tcp6`,
//!     `udp`, `udp6`, `sctp`, `sctp6`, `arp`, `mpls`, `mplsm`, `pbb`;
//!   - every OpenFlow 1.3 match field under its OXM-era name and ovs-ofctl's
//!     older aliases (see [`fields`]), values as decimal or `0x` hex, MAC
//!     and IP addresses, `/prefix` or `/mask` where the field is maskable,
//!     reserved port names (`LOCAL`, `CONTROLLER`, …) for ports;
//!     `tp_src`/`tp_dst` map to TCP, UDP or SCTP by the flow's `ip_proto`,
//!     and `icmp_type`/`icmp_code` to ICMPv6 in an IPv6 flow (as ovs-ofctl);
//!     `dl_vlan=N` means "tagged with VID N", `vlan_vid` takes the raw OXM
//!     value including `OFPVID_PRESENT` (0x1000), `vlan_tci=TCI[/MASK]`
//!     (as ovs-ofctl prints it) becomes `vlan_vid` and `vlan_pcp` (the
//!     PCP bits all masked or none).
//! - **Actions** (see [`actions`]): `output:N` (or a bare port number or
//!   reserved name), `controller[:max_len]`, `drop`, `group:N`,
//!   `set_queue:N`, `push_vlan:ETH`, `pop_vlan`/`strip_vlan`,
//!   `push_mpls:ETH`, `pop_mpls:ETH`, `push_pbb:ETH`, `pop_pbb`,
//!   `set_mpls_ttl:N` (or `(N)`), `dec_mpls_ttl`, `mod_nw_ttl:N`/`set_nw_ttl:N`,
//!   `dec_ttl`, `copy_ttl_in`, `copy_ttl_out`, `set_field:VALUE->FIELD`,
//!   and the `mod_*` shorthands (`mod_dl_src`, `mod_dl_dst`, `mod_nw_src`,
//!   `mod_nw_dst`, `mod_nw_tos`, `mod_nw_ecn`, `mod_tp_src`, `mod_tp_dst`,
//!   `mod_vlan_vid`, `mod_vlan_pcp`, `set_mpls_label`, `set_mpls_tc`;
//!   in a flow whose match does not require a VLAN tag, `mod_vlan_*` push
//!   one first, as ovs-ofctl does).
//!   Instructions appear in the action list as in ovs-ofctl: `meter:N`,
//!   `write_actions(...)`, `clear_actions`, `write_metadata:V[/M]`,
//!   `goto_table:N`; everything else forms the apply-actions instruction.
//! - **POF** (sluice's protocol-oblivious fields, see [`pof`]): the match
//!   field `pof(POS,LEN)=VALUE[/MASK]` (any number per flow, each field
//!   once) and the actions `pof_set`, `pof_modify`, `pof_add`, `pof_del`,
//!   `pof_checksum`, `pof_write_metadata`, wherever actions are read
//!   (apply, `write_actions(...)`, buckets, packet-out).
//! - **Filter programs** (sluice's eBPF filters, see [`filterprog`]): the
//!   match fields `filter_prog=ID` and `pcap_filter="EXPR"` (a
//!   double-quoted string with `\"` and `\\` escapes, which may hold
//!   spaces, commas and `=`; at most one of each per flow) and the action
//!   `send_maps:ID:MAP[:MAP...]`.
//! - **Groups**: `group_id=N,type=all|select|indirect|ff|fast_failover,
//!   bucket=...` with bucket parameters `weight`, `watch_port`,
//!   `watch_group` (written `k=v` or `k:v`) and `actions=...` (the
//!   `actions=` may be omitted).
//! - **Meters**: `meter=N,kbps|pktps[,burst][,stats],band=type=drop|
//!   dscp_remark,rate=R[,burst_size=B][,prec_level=P]` (repeat `band=`).
//!
//! Not accepted (rejected with a message naming the token): OpenFlow 1.0-only
//! and Nicira-extension syntax (`resubmit`, `load`, `move`, `learn`,
//! `enqueue`, `normal` is accepted as the reserved port NORMAL only).
//!
//! Errors are [`TextError`]s carrying the byte range of the offending token
//! so the CLI can point at it with a caret.

pub mod actions;
pub mod fields;
pub mod filterprog;
mod lex;
pub mod pof;
pub mod specs;

pub use actions::{parse_actions, parse_instructions};
pub use specs::{parse_flow, parse_group, parse_meter, FlowSpec, GroupSpec, MeterSpec, Usage};

use core::fmt;

/// A syntax or semantic error in ovs-ofctl text, with the offending token's
/// byte range in the input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextError {
    pub start: usize,
    pub end: usize,
    pub msg: String,
}

impl TextError {
    pub(crate) fn new(start: usize, end: usize, msg: impl Into<String>) -> Self {
        TextError { start, end, msg: msg.into() }
    }

    /// The message followed by the input with a caret line under the bad
    /// token, like a compiler diagnostic.
    pub fn render(&self, input: &str) -> String {
        let start = self.start.min(input.len());
        let end = self.end.clamp(start, input.len());
        let col = input[..start].chars().count();
        let width = input[start..end].chars().count().max(1);
        format!("{}\n  {}\n  {}{}", self.msg, input, " ".repeat(col), "^".repeat(width))
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at byte {})", self.msg, self.start)
    }
}

impl std::error::Error for TextError {}

pub type TextResult<T> = Result<T, TextError>;
