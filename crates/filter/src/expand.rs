//! Expansion of the AST into primitive tests with explicit length guards,
//! reproducing libpcap 1.10's `gencode.c` for DLT_EN10MB.
//!
//! The tree is walked in source order because `vlan` and `mpls` change the
//! offsets used by every primitive that comes *after* them in the text
//! (libpcap generates code while parsing and shifts `off_linkpl`,
//! `off_linktype` and `off_nl` as a side effect; parentheses do not scope the
//! shift). The boolean structure keeps libpcap's evaluation order
//! (`gen_and(a, b)` tests `a` first), which matters because an out-of-range
//! read rejects the whole packet.

use crate::ir::{Chain, CmpOp, Program, Test, Val, ValId, B};
use crate::parse::{AddrQ, ArOp, Arith, Dir, Expr, Id, LlcKind, Prim, Proto, RelOp, Span};
use crate::Error;

/// Compilation options that change semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// IPv4 netmask for `ip broadcast` (libpcap's `netmask` argument);
    /// `None` makes `ip broadcast` an error like PCAP_NETMASK_UNKNOWN.
    pub netmask: Option<u32>,
}

#[derive(Debug, Clone, Copy)]
struct Off {
    linktype: u32,
    linkpl: u32,
    nl: u32,
    mpls: u32,
}

pub struct Expander<'a> {
    pub p: &'a mut Program,
    src: &'a str,
    off: Off,
    opts: Options,
}

const ETH_IP: u32 = 0x0800;
const ETH_IP6: u32 = 0x86dd;
const ETH_ARP: u32 = 0x0806;
const ETH_RARP: u32 = 0x8035;
const ETH_ATALK: u32 = 0x809b;
const ETH_AARP: u32 = 0x80f3;
const ETH_IPX: u32 = 0x8137;
const ETH_DECNET: u32 = 0x6003;
const ETH_LAT: u32 = 0x6004;
const ETH_SCA: u32 = 0x6007;
const ETH_MOPRC: u32 = 0x6002;
const ETH_MOPDL: u32 = 0x6001;
const ETH_LOOPBACK: u32 = 0x9000;
/// 802.2 SAPs (`gen_linktype` takes them where an ethertype goes).
const SAP_ISONS: u32 = 0xfe;
const SAP_STP: u32 = 0x42;
const SAP_IPX: u32 = 0xe0;
const SAP_NETBEUI: u32 = 0xf0;
/// OSI network-layer protocol identifiers (NLPID, the byte after the LLC
/// header).
const NLPID_CLNP: u32 = 0x81;
const NLPID_ESIS: u32 = 0x82;
const NLPID_ISIS: u32 = 0x83;
/// IS-IS PDU types (byte 4 after the NLPID), in libpcap's test order.
const ISIS_L1: &[u32] = &[0x1a, 0x18, 0x12, 0x0f, 0x11];
const ISIS_L2: &[u32] = &[0x1b, 0x19, 0x14, 0x10, 0x11];
const ISIS_IIH: &[u32] = &[0x11, 0x0f, 0x10];
const ISIS_LSP: &[u32] = &[0x12, 0x14];
const ISIS_SNP: &[u32] = &[0x1b, 0x1a, 0x18, 0x19];
const ISIS_CSNP: &[u32] = &[0x18, 0x19];
const ISIS_PSNP: &[u32] = &[0x1a, 0x1b];

type R<T> = Result<T, Error>;

/// Expands a parsed expression (None = empty filter, accepts everything).
pub fn expand(p: &mut Program, src: &str, e: Option<&Expr>, opts: Options) -> R<B> {
    let mut x = Expander { p, src, off: Off { linktype: 12, linkpl: 14, nl: 0, mpls: 0 }, opts };
    match e {
        None => Ok(B::Const(true)),
        Some(e) => x.expr(e),
    }
}

/// Accumulated conditions and value of an arithmetic expression.
pub struct Ar {
    pub conds: Vec<B>,
    pub v: ValId,
}

impl<'a> Expander<'a> {
    /// A fresh expander (offsets at the start of an Ethernet frame).
    pub fn new(p: &'a mut Program, src: &'a str, opts: Options) -> Expander<'a> {
        Expander { p, src, off: Off { linktype: 12, linkpl: 14, nl: 0, mpls: 0 }, opts }
    }

    /// Expands a filter expression, updating the `vlan`/`mpls` offsets.
    pub fn filter(&mut self, e: Option<&Expr>) -> R<B> {
        match e {
            None => Ok(B::Const(true)),
            Some(e) => self.expr(e),
        }
    }

    /// Expands a pfmatch handler argument: the condition under which it
    /// can be evaluated (protocol present, every read in range, no
    /// division by zero) and its value. With `addr`, the argument must be
    /// a packet access and its value is the offset instead of the bytes.
    pub fn argument(&mut self, a: &Arith, addr: bool, span: &Span) -> R<(B, ValId)> {
        let ar = self.arith(a)?;
        let v = if addr {
            match self.p.get_val(ar.v) {
                Val::Load { base, k, .. } => {
                    let kk = self.p.konst(k);
                    let off = self.p.val(Val::Bin(ArOp::Add, base, kk));
                    // The addressed byte must be in the packet.
                    let one = self.p.val(Val::Load { base, k, size: 1 });
                    let mut g = Vec::new();
                    self.guards(one, &mut g);
                    let mut b = B::Const(true);
                    for t in g.into_iter().rev() {
                        b = B::Check(t, Box::new(b));
                    }
                    let mut c = b;
                    for x in ar.conds.into_iter().rev() {
                        c = B::and(x, c);
                    }
                    return Ok((c, off));
                }
                _ => return Err(self.err(span, "'&' needs a packet access such as &ip[0]")),
            }
        } else {
            ar.v
        };
        let mut g = Vec::new();
        self.guards(v, &mut g);
        let mut b = B::Const(true);
        for t in g.into_iter().rev() {
            b = B::Check(t, Box::new(b));
        }
        for x in ar.conds.into_iter().rev() {
            b = B::and(x, b);
        }
        Ok((b, v))
    }
}

impl<'a> Expander<'a> {
    fn err(&self, span: &Span, msg: impl Into<String>) -> Error {
        Error::new(self.src, span.clone(), msg)
    }

    fn expr(&mut self, e: &Expr) -> R<B> {
        Ok(match e {
            Expr::And(a, b) => {
                let a = self.expr(a)?;
                B::and(a, self.expr(b)?)
            }
            Expr::Or(a, b) => {
                let a = self.expr(a)?;
                B::or(a, self.expr(b)?)
            }
            Expr::Not(a) => B::negate(self.expr(a)?),
            Expr::Prim(p, span) => self.prim(p, span)?,
            Expr::Rel(op, a, b, span) => self.relation(*op, a, b, span)?,
        })
    }

    // ------------------------------------------------------------ atoms

    fn nh(&self) -> u32 {
        self.off.linkpl + self.off.nl
    }

    fn load(&mut self, off: u32, size: u8) -> ValId {
        let z = self.p.konst(0);
        self.p.val(Val::Load { base: z, k: off, size })
    }

    /// Guarded test over one constant-offset load.
    fn guarded(&mut self, off: u32, size: u8, t: impl FnOnce(&mut Self, ValId) -> B) -> B {
        let ld = self.load(off, size);
        let inner = t(self, ld);
        match off.checked_add(u32::from(size)) {
            Some(end) => B::Check(Test::CapGe(end), Box::new(inner)),
            None => B::Check(Test::CapGe(u32::MAX), Box::new(B::Const(false))),
        }
    }

    fn cmp_op(&mut self, op: CmpOp, a: ValId, c: u32) -> B {
        let c = self.p.konst(c);
        B::Test(Test::Cmp(op, a, c))
    }

    /// `gen_cmp`: `P[off:size] == v`.
    fn cmp(&mut self, off: u32, size: u8, v: u32) -> B {
        self.guarded(off, size, |s, ld| s.cmp_op(CmpOp::Eq, ld, v))
    }

    /// `gen_mcmp`: `P[off:size] & mask == v`.
    fn mcmp(&mut self, off: u32, size: u8, v: u32, mask: u32) -> B {
        self.guarded(off, size, |s, ld| {
            let x = if mask == u32::MAX {
                ld
            } else {
                let m = s.p.konst(mask);
                s.p.val(Val::Bin(ArOp::And, ld, m))
            };
            s.cmp_op(CmpOp::Eq, x, v)
        })
    }

    fn cmp_gt(&mut self, off: u32, size: u8, v: u32) -> B {
        self.guarded(off, size, |s, ld| s.cmp_op(CmpOp::Gt, ld, v))
    }
    fn cmp_ge(&mut self, off: u32, size: u8, v: u32) -> B {
        self.guarded(off, size, |s, ld| s.cmp_op(CmpOp::Ge, ld, v))
    }

    /// `gen_linktype` for Ethernet (and MPLS-encapsulated payloads).
    fn linktype(&mut self, et: u32, span: &Span) -> R<B> {
        if self.off.mpls > 0 {
            let nh = self.nh();
            let ver = match et {
                ETH_IP => 0x40,
                ETH_IP6 => 0x60,
                _ => return Err(self.err(span, "unsupported protocol over mpls")),
            };
            let b0 = self.mcmp(nh.wrapping_sub(2), 1, 0x01, 0x01);
            let b1 = self.mcmp(nh, 1, ver, 0xf0);
            return Ok(B::and(b0, b1));
        }
        let lt = self.off.linktype;
        let llc = self.off.linkpl;
        match et {
            // LLC SAPs compared as DSAP and SSAP together (gen_ether_linktype).
            SAP_ISONS | 0x06 | SAP_NETBEUI => {
                let b0 = B::negate(self.cmp_gt(lt, 2, 1500));
                let b1 = self.cmp(llc, 2, (et << 8) | et);
                return Ok(B::and(b0, b1));
            }
            // IPX: Ethernet II 0x8137, or on an 802.3 frame: SNAP with
            // OUI 0 and type 0x8137, DSAP 0xe0, or "raw" 802.3 (0xffff).
            SAP_IPX => {
                let b0 = self.cmp(lt, 2, ETH_IPX);
                let not_len = B::negate(self.cmp_gt(lt, 2, 1500));
                let snap = self.snap(0, ETH_IPX);
                let dsap = self.cmp(llc, 1, SAP_IPX);
                let raw = self.cmp(llc, 2, 0xffff);
                let b1 = B::and(not_len, B::or(B::or(snap, dsap), raw));
                return Ok(B::or(b0, b1));
            }
            // AppleTalk phase 2 (SNAP OUI 08-00-07) and AARP (SNAP OUI 0),
            // or the Ethernet II type.
            ETH_ATALK | ETH_AARP => {
                let b0 = self.cmp(lt, 2, et);
                let not_len = B::negate(self.cmp_gt(lt, 2, 1500));
                let snap = self.snap(if et == ETH_ATALK { 0x08_0007 } else { 0 }, et);
                return Ok(B::or(b0, B::and(not_len, snap)));
            }
            _ => {}
        }
        if et <= 1500 {
            let b0 = B::negate(self.cmp_gt(lt, 2, 1500));
            let b1 = self.cmp(llc, 1, et);
            return Ok(B::and(b0, b1));
        }
        Ok(self.cmp(lt, 2, et))
    }

    /// `gen_snap`: the 8-byte LLC/SNAP header `aa aa 03 OUI type`,
    /// compared as its last four bytes, then its first four.
    fn snap(&mut self, oui: u32, ptype: u32) -> B {
        let llc = self.off.linkpl;
        let b0 = self.cmp(llc + 4, 4, ((oui & 0xffff) << 16) | (ptype & 0xffff));
        let b1 = self.cmp(llc, 4, 0xaaaa_0300 | ((oui >> 16) & 0xff));
        B::and(b0, b1)
    }

    /// `gen_llc` for Ethernet: an 802.3 length field and not the "raw"
    /// NetWare 0xffff header.
    fn llc(&mut self, kind: Option<LlcKind>) -> B {
        let lt = self.off.linktype;
        let llc = self.off.linkpl;
        let b0 = B::negate(self.cmp_gt(lt, 2, 1500));
        let b1 = B::negate(self.cmp(llc, 2, 0xffff));
        let base = B::and(b0, b1);
        let (v, mask) = match kind {
            None => return base,
            Some(LlcKind::I) => (0, 0x01),
            Some(LlcKind::S) => (0x01, 0x03),
            Some(LlcKind::U) => (0x03, 0x03),
            Some(LlcKind::SSub(v)) => (u32::from(v), 0x0f),
            Some(LlcKind::USub(v)) => (u32::from(v), 0xef),
        };
        B::and(base, self.mcmp(llc + 2, 1, v, mask))
    }

    /// Any of the IS-IS PDU types `types`, tested in that order.
    fn isis_types(&mut self, types: &[u32], span: &Span) -> R<B> {
        let mut acc: Option<B> = None;
        for &t in types {
            let b = self.proto(t, Some(Proto::Isis), span)?;
            acc = Some(match acc {
                None => b,
                Some(a) => B::or(a, b),
            });
        }
        Ok(acc.unwrap_or(B::Const(false)))
    }

    fn ipfrag(&mut self) -> B {
        // not (ip[6:2] & 0x1fff != 0)
        let off = self.nh() + 6;
        self.mcmp(off, 2, 0, 0x1fff)
    }

    /// `gen_proto(v, proto)` for Q_IP / Q_IPV6 / Q_DEFAULT / Q_LINK.
    fn proto(&mut self, v: u32, p: Option<Proto>, span: &Span) -> R<B> {
        let nh = self.nh();
        match p {
            None => {
                let a = self.proto(v, Some(Proto::Ip), span)?;
                let b = self.proto(v, Some(Proto::Ip6), span)?;
                Ok(B::or(a, b))
            }
            Some(Proto::Ip) => {
                let b0 = self.linktype(ETH_IP, span)?;
                Ok(B::and(b0, self.cmp(nh + 9, 1, v)))
            }
            Some(Proto::Ip6) => {
                let b0 = self.linktype(ETH_IP6, span)?;
                let direct = self.cmp(nh + 6, 1, v);
                let frag = self.cmp(nh + 6, 1, 44);
                let after = self.cmp(nh + 40, 1, v);
                Ok(B::and(b0, B::or(direct, B::and(frag, after))))
            }
            Some(Proto::Link) => self.linktype(v, span),
            // OSI: the NLPID after the 3-byte LLC header.
            Some(Proto::Iso) => {
                let b0 = self.linktype(SAP_ISONS, span)?;
                let llc = self.off.linkpl;
                Ok(B::and(b0, self.cmp(llc + 3, 1, v)))
            }
            // IS-IS: the PDU type, 4 bytes after the NLPID.
            Some(Proto::Isis) => {
                let b0 = self.proto(NLPID_ISIS, Some(Proto::Iso), span)?;
                let llc = self.off.linkpl;
                Ok(B::and(b0, self.cmp(llc + 3 + 4, 1, v)))
            }
            Some(other) => {
                Err(self.err(span, format!("'{}' modifier applied to 'proto'", proto_name(other))))
            }
        }
    }

    /// `gen_proto_abbrev`.
    fn abbrev(&mut self, p: Proto, span: &Span) -> R<B> {
        let both = |s: &mut Self, v: u32| -> R<B> {
            let a = s.proto(v, Some(Proto::Ip), span)?;
            let b = s.proto(v, Some(Proto::Ip6), span)?;
            Ok(B::or(a, b))
        };
        match p {
            Proto::Ip => self.linktype(ETH_IP, span),
            Proto::Ip6 => self.linktype(ETH_IP6, span),
            Proto::Arp => self.linktype(ETH_ARP, span),
            Proto::Rarp => self.linktype(ETH_RARP, span),
            Proto::Tcp => both(self, 6),
            Proto::Udp => both(self, 17),
            Proto::Sctp => both(self, 132),
            Proto::Pim => both(self, 103),
            Proto::Ah => both(self, 51),
            Proto::Esp => both(self, 50),
            Proto::Icmp => self.proto(1, Some(Proto::Ip), span),
            Proto::Igmp => self.proto(2, Some(Proto::Ip), span),
            Proto::Igrp => self.proto(9, Some(Proto::Ip), span),
            Proto::Vrrp | Proto::Carp => self.proto(112, Some(Proto::Ip), span),
            Proto::Icmp6 => self.proto(58, Some(Proto::Ip6), span),
            Proto::Atalk => self.linktype(ETH_ATALK, span),
            Proto::Aarp => self.linktype(ETH_AARP, span),
            Proto::Decnet => self.linktype(ETH_DECNET, span),
            Proto::Lat => self.linktype(ETH_LAT, span),
            Proto::Sca => self.linktype(ETH_SCA, span),
            Proto::Moprc => self.linktype(ETH_MOPRC, span),
            Proto::Mopdl => self.linktype(ETH_MOPDL, span),
            Proto::Iso => self.linktype(SAP_ISONS, span),
            Proto::Stp => self.linktype(SAP_STP, span),
            Proto::Ipx => self.linktype(SAP_IPX, span),
            Proto::Netbeui => self.linktype(SAP_NETBEUI, span),
            Proto::Esis => self.proto(NLPID_ESIS, Some(Proto::Iso), span),
            Proto::Isis => self.proto(NLPID_ISIS, Some(Proto::Iso), span),
            Proto::Clnp => self.proto(NLPID_CLNP, Some(Proto::Iso), span),
            Proto::L1 => self.isis_types(ISIS_L1, span),
            Proto::L2 => self.isis_types(ISIS_L2, span),
            Proto::Iih => self.isis_types(ISIS_IIH, span),
            Proto::Lsp => self.isis_types(ISIS_LSP, span),
            Proto::Snp => self.isis_types(ISIS_SNP, span),
            Proto::Csnp => self.isis_types(ISIS_CSNP, span),
            Proto::Psnp => self.isis_types(ISIS_PSNP, span),
            Proto::Link => Err(self.err(span, "link layer applied in wrong context")),
        }
    }

    // ------------------------------------------------------------ hosts

    #[allow(clippy::too_many_arguments)]
    fn hostop(
        &mut self,
        addr: u32,
        mask: u32,
        dir: Dir,
        et: u32,
        so: u32,
        dof: u32,
        span: &Span,
    ) -> R<B> {
        match dir {
            Dir::Src | Dir::Dst => {
                let off = if dir == Dir::Src { so } else { dof };
                let b0 = self.linktype(et, span)?;
                let nh = self.nh();
                Ok(B::and(b0, self.mcmp(nh + off, 4, addr, mask)))
            }
            Dir::And => {
                let a = self.hostop(addr, mask, Dir::Src, et, so, dof, span)?;
                Ok(B::and(a, self.hostop(addr, mask, Dir::Dst, et, so, dof, span)?))
            }
            Dir::Or | Dir::Default => {
                let a = self.hostop(addr, mask, Dir::Src, et, so, dof, span)?;
                Ok(B::or(a, self.hostop(addr, mask, Dir::Dst, et, so, dof, span)?))
            }
        }
    }

    fn host(&mut self, addr: u32, mask: u32, proto: Option<Proto>, dir: Dir, span: &Span) -> R<B> {
        match proto {
            None => {
                let b0 = self.host(addr, mask, Some(Proto::Ip), dir, span)?;
                if self.off.mpls > 0 {
                    return Ok(b0);
                }
                let b1 = self.host(addr, mask, Some(Proto::Arp), dir, span)?;
                let b2 = self.host(addr, mask, Some(Proto::Rarp), dir, span)?;
                Ok(B::or(B::or(b0, b1), b2))
            }
            Some(Proto::Ip) => self.hostop(addr, mask, dir, ETH_IP, 12, 16, span),
            Some(Proto::Arp) => self.hostop(addr, mask, dir, ETH_ARP, 14, 24, span),
            Some(Proto::Rarp) => self.hostop(addr, mask, dir, ETH_RARP, 14, 24, span),
            Some(Proto::Link) => Err(self.err(span, "illegal link layer address")),
            Some(Proto::Decnet) => Err(self
                .err(span, "DECnet addresses ('decnet host/src/dst') are not supported by sluice")),
            Some(p @ (Proto::Iso | Proto::Atalk)) => Err(self.err(
                span,
                format!("{} host filtering not implemented (as in libpcap)", proto_name(p)),
            )),
            Some(p) => Err(self.err(span, format!("'{}' modifier applied to host", proto_name(p)))),
        }
    }

    fn hostop6(&mut self, a: [u32; 4], m: [u32; 4], dir: Dir, span: &Span) -> R<B> {
        match dir {
            Dir::Src | Dir::Dst => {
                let off = self.nh() + if dir == Dir::Src { 8 } else { 24 };
                let mut b = self.linktype(ETH_IP6, span)?;
                for i in 0..4 {
                    let t = self.mcmp(off + 4 * i as u32, 4, a[i], m[i]);
                    b = B::and(b, t);
                }
                Ok(b)
            }
            Dir::And => {
                let x = self.hostop6(a, m, Dir::Src, span)?;
                Ok(B::and(x, self.hostop6(a, m, Dir::Dst, span)?))
            }
            Dir::Or | Dir::Default => {
                let x = self.hostop6(a, m, Dir::Src, span)?;
                Ok(B::or(x, self.hostop6(a, m, Dir::Dst, span)?))
            }
        }
    }

    fn ehostop(&mut self, mac: [u8; 6], dir: Dir) -> B {
        match dir {
            Dir::Src | Dir::Dst => {
                let off = if dir == Dir::Src { 6 } else { 0 };
                let w = u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]);
                let h = u32::from(u16::from_be_bytes([mac[0], mac[1]]));
                let a = self.cmp(off + 2, 4, w);
                let b = self.cmp(off, 2, h);
                B::and(a, b)
            }
            Dir::And => B::and(self.ehostop(mac, Dir::Src), self.ehostop(mac, Dir::Dst)),
            Dir::Or | Dir::Default => {
                B::or(self.ehostop(mac, Dir::Src), self.ehostop(mac, Dir::Dst))
            }
        }
    }

    // ------------------------------------------------------------ ports

    fn portatom(&mut self, off: u32, v: u32, v2: u32, v6: bool) -> B {
        let range = v != v2;
        let (lo, hi) = if v > v2 { (v2, v) } else { (v, v2) };
        if v6 {
            let o = self.nh() + 40 + off;
            if range {
                let a = self.cmp_ge(o, 2, lo);
                let b = B::negate(self.cmp_gt(o, 2, hi));
                B::and(a, b)
            } else {
                self.cmp(o, 2, v)
            }
        } else {
            // X = 4*(P[nh] & 0xf); P[X + nh + off]
            let nh = self.nh();
            let hl_byte = self.load(nh, 1);
            let m = self.p.konst(0xf);
            let masked = self.p.val(Val::Bin(ArOp::And, hl_byte, m));
            let two = self.p.konst(2);
            let x = self.p.val(Val::Bin(ArOp::Shl, masked, two));
            let k = nh + off;
            let ld = self.p.val(Val::Load { base: x, k, size: 2 });
            let mk = |_s: &mut Self, t: B| -> B {
                B::Check(
                    Test::CapGe(nh + 1),
                    Box::new(B::Check(Test::InBounds { base: x, k, size: 2 }, Box::new(t))),
                )
            };
            if range {
                let a = s_cmp(self, CmpOp::Ge, ld, lo);
                let a = mk(self, a);
                let b = s_cmp(self, CmpOp::Gt, ld, hi);
                let b = mk(self, b);
                B::and(a, B::negate(b))
            } else {
                let a = s_cmp(self, CmpOp::Eq, ld, v);
                mk(self, a)
            }
        }
    }

    fn portop(&mut self, lo: u32, hi: u32, ipproto: u32, dir: Dir, v6: bool) -> B {
        let b0 = if v6 {
            self.cmp(self.nh() + 6, 1, ipproto)
        } else {
            let t = self.cmp(self.nh() + 9, 1, ipproto);
            B::and(t, self.ipfrag())
        };
        let b1 = match dir {
            Dir::Src => self.portatom(0, lo, hi, v6),
            Dir::Dst => self.portatom(2, lo, hi, v6),
            Dir::And => B::and(self.portatom(0, lo, hi, v6), self.portatom(2, lo, hi, v6)),
            Dir::Or | Dir::Default => {
                B::or(self.portatom(0, lo, hi, v6), self.portatom(2, lo, hi, v6))
            }
        };
        B::and(b0, b1)
    }

    fn port_one(
        &mut self,
        lo: u32,
        hi: u32,
        ipproto: Option<u32>,
        dir: Dir,
        v6: bool,
        span: &Span,
    ) -> R<B> {
        let b0 = self.linktype(if v6 { ETH_IP6 } else { ETH_IP }, span)?;
        let b1 = match ipproto {
            Some(p) => self.portop(lo, hi, p, dir, v6),
            None => {
                let t = self.portop(lo, hi, 6, dir, v6);
                let u = self.portop(lo, hi, 17, dir, v6);
                let s = self.portop(lo, hi, 132, dir, v6);
                B::or(s, B::or(t, u))
            }
        };
        Ok(B::and(b0, b1))
    }

    fn port(
        &mut self,
        lo: u32,
        hi: u32,
        proto: Option<Proto>,
        dir: Dir,
        what: &str,
        span: &Span,
    ) -> R<B> {
        let ipproto = match proto {
            None => None,
            Some(Proto::Tcp) => Some(6),
            Some(Proto::Udp) => Some(17),
            Some(Proto::Sctp) => Some(132),
            Some(_) => return Err(self.err(span, format!("illegal qualifier of '{what}'"))),
        };
        for v in [lo, hi] {
            if v > 65535 {
                return Err(self.err(span, format!("illegal port number {v} > 65535")));
            }
        }
        let b6 = self.port_one(lo, hi, ipproto, dir, true, span)?;
        let b4 = self.port_one(lo, hi, ipproto, dir, false, span)?;
        Ok(B::or(b6, b4))
    }

    // ------------------------------------------------------------ primitives

    fn prim(&mut self, p: &Prim, span: &Span) -> R<B> {
        match p {
            Prim::Proto(pr) => self.abbrev(*pr, span),
            Prim::Less(n) => {
                let l = self.p.val(Val::WireLen);
                Ok(B::negate(self.cmp_op(CmpOp::Gt, l, *n)))
            }
            Prim::Greater(n) => {
                let l = self.p.val(Val::WireLen);
                Ok(self.cmp_op(CmpOp::Ge, l, *n))
            }
            Prim::Broadcast(pr) => match pr {
                None | Some(Proto::Link) => Ok(self.ehostop([0xff; 6], Dir::Dst)),
                Some(Proto::Ip) => {
                    let Some(nm) = self.opts.netmask else {
                        return Err(self.err(span, "netmask not known, so 'ip broadcast' not supported"));
                    };
                    let b0 = self.linktype(ETH_IP, span)?;
                    let hm = !nm;
                    let nh = self.nh();
                    let b1 = self.mcmp(nh + 16, 4, 0, hm);
                    let b2 = self.mcmp(nh + 16, 4, hm, hm);
                    Ok(B::and(b0, B::or(b1, b2)))
                }
                Some(_) => Err(self.err(span, "only link-layer/IP broadcast filters supported")),
            },
            Prim::Multicast(pr) => match pr {
                None | Some(Proto::Link) => Ok(B::negate(self.mcmp(0, 1, 0, 1))),
                Some(Proto::Ip) => {
                    let b0 = self.linktype(ETH_IP, span)?;
                    let nh = self.nh();
                    Ok(B::and(b0, self.cmp_ge(nh + 16, 1, 224)))
                }
                Some(Proto::Ip6) => {
                    let b0 = self.linktype(ETH_IP6, span)?;
                    let nh = self.nh();
                    Ok(B::and(b0, self.cmp(nh + 24, 1, 255)))
                }
                Some(_) => Err(self.err(span, "link-layer multicast filters supported only on ethernet/FDDI/token ring/ARCNET/802.11/ATM LANE/Fibre Channel")),
            },
            Prim::Vlan(id) => {
                if self.off.mpls > 0 {
                    return Err(self.err(span, "no VLAN match after MPLS"));
                }
                let a = self.cmp(self.off.linktype, 2, 0x8100);
                let b = self.cmp(self.off.linktype, 2, 0x88a8);
                let c = self.cmp(self.off.linktype, 2, 0x9100);
                let mut r = B::or(B::or(a, b), c);
                if let Some(id) = id {
                    if *id > 0x0fff {
                        return Err(self.err(span, format!("VLAN tag {id} greater than maximum 4095")));
                    }
                    let nh = self.nh();
                    r = B::and(r, self.mcmp(nh, 2, *id, 0x0fff));
                }
                self.off.linkpl += 4;
                self.off.linktype += 4;
                Ok(r)
            }
            Prim::Mpls(label) => {
                let mut r = if self.off.mpls > 0 {
                    let nh = self.nh();
                    self.mcmp(nh - 4 + 2, 1, 0, 0x01)
                } else {
                    self.linktype(0x8847, span)?
                };
                if let Some(l) = label {
                    if *l > 0xfffff {
                        return Err(self.err(span, format!("MPLS label {l} greater than maximum 1048575")));
                    }
                    let nh = self.nh();
                    r = B::and(r, self.mcmp(nh, 4, l << 12, 0xfffff000));
                }
                self.off.nl += 4;
                self.off.mpls += 1;
                Ok(r)
            }
            Prim::Llc(kind) => Ok(self.llc(*kind)),
            Prim::Id(q, id) => self.id(q, id, span),
        }
    }

    fn id(&mut self, q: &crate::parse::Qual, id: &Id, span: &Span) -> R<B> {
        let proto = q.proto;
        match id {
            Id::Num(v) => self.ncode(None, *v, q, span),
            Id::Hid(v, bits) => match q.addr {
                AddrQ::Port | AddrQ::Portrange => {
                    Err(self.err(span, "'port' modifier applied to ip host"))
                }
                AddrQ::Proto | AddrQ::Protochain => {
                    Err(self.err(span, "'proto' modifier applied to ip host"))
                }
                _ => self.ncode(Some(*bits), *v, q, span),
            },
            Id::HidLen(v, bits, len) | Id::HidMask(v, bits, len) => {
                let n = if *bits >= 32 { *v } else { v << (32 - bits) };
                let m = if let Id::HidMask(..) = id {
                    *len
                } else {
                    if *len > 32 {
                        return Err(self.err(span, "mask length must be <= 32".to_string()));
                    }
                    if *len == 0 {
                        0
                    } else {
                        u32::MAX << (32 - len)
                    }
                };
                if n & !m != 0 {
                    return Err(self.err(span, "non-network bits set in network address"));
                }
                if q.addr != AddrQ::Net {
                    return Err(self.err(span, "Mask syntax for networks only"));
                }
                self.host(n, m, proto, q.dir, span)
            }
            Id::Hid6(a, len) => {
                if *len > 128 {
                    return Err(self.err(span, "mask length must be <= 128"));
                }
                let addr = u128::from(*a);
                let mask: u128 = if *len == 0 { 0 } else { u128::MAX << (128 - len) };
                if addr & !mask != 0 {
                    return Err(self.err(span, "non-network bits set in network address"));
                }
                match q.addr {
                    AddrQ::Default | AddrQ::Host if *len != 128 => {
                        return Err(self.err(span, "Mask syntax for networks only"))
                    }
                    AddrQ::Default | AddrQ::Host | AddrQ::Net => {}
                    _ => return Err(self.err(span, "illegal qualifier for an IPv6 address")),
                }
                match proto {
                    None | Some(Proto::Ip6) => {}
                    Some(p) => {
                        return Err(self.err(
                            span,
                            format!("'{}' modifier applied to ip6 host", proto_name(p)),
                        ))
                    }
                }
                let w = |x: u128| [(x >> 96) as u32, (x >> 64) as u32, (x >> 32) as u32, x as u32];
                self.hostop6(w(addr), w(mask), q.dir, span)
            }
            Id::Eid(mac) => {
                if matches!(q.addr, AddrQ::Host | AddrQ::Default) && proto == Some(Proto::Link) {
                    Ok(self.ehostop(*mac, q.dir))
                } else {
                    Err(self.err(span, "ethernet address used in non-ether expression"))
                }
            }
            Id::Name(name) => self.scode(name, q, span),
        }
    }

    fn ncode(&mut self, vlen: Option<u32>, v: u32, q: &crate::parse::Qual, span: &Span) -> R<B> {
        let proto = q.proto;
        match q.addr {
            AddrQ::Default | AddrQ::Host | AddrQ::Net => {
                if proto == Some(Proto::Link) {
                    return Err(self.err(span, "illegal link layer address"));
                }
                let (mut v, mut mask) = (v, u32::MAX);
                match vlen {
                    None if q.addr == AddrQ::Net => {
                        while v != 0 && v & 0xff00_0000 == 0 {
                            v <<= 8;
                            mask <<= 8;
                        }
                    }
                    None => {}
                    Some(bits) if bits < 32 => {
                        v <<= 32 - bits;
                        mask <<= 32 - bits;
                    }
                    Some(_) => {}
                }
                self.host(v, mask, proto, q.dir, span)
            }
            AddrQ::Port => self.port(v, v, proto, q.dir, "port", span),
            AddrQ::Portrange => self.port(v, v, proto, q.dir, "portrange", span),
            AddrQ::Proto => self.proto(v, proto, span),
            AddrQ::Protochain => self.protochain(v, proto, span),
        }
    }

    fn protochain(&mut self, v: u32, proto: Option<Proto>, span: &Span) -> R<B> {
        match proto {
            None => {
                let a = self.protochain(v, Some(Proto::Ip), span)?;
                Ok(B::or(a, self.protochain(v, Some(Proto::Ip6), span)?))
            }
            Some(Proto::Ip) | Some(Proto::Ip6) => {
                let v6 = proto == Some(Proto::Ip6);
                let b0 = self.linktype(if v6 { ETH_IP6 } else { ETH_IP }, span)?;
                Ok(B::and(b0, B::Chain(Chain { v6, nh: self.nh(), proto: v })))
            }
            Some(p) => {
                Err(self
                    .err(span, format!("bad protocol applied for 'protochain': {}", proto_name(p))))
            }
        }
    }

    fn scode(&mut self, name: &str, q: &crate::parse::Qual, span: &Span) -> R<B> {
        match q.addr {
            AddrQ::Portrange => {
                let parsed =
                    name.split_once('-').and_then(|(a, b)| Some((num_word(a)?, num_word(b)?)));
                match parsed {
                    Some((lo, hi)) => self.port(lo, hi, q.proto, q.dir, "portrange", span),
                    None => Err(self.err(
                        span,
                        format!("illegal port range '{name}' (service names are not supported)"),
                    )),
                }
            }
            AddrQ::Proto | AddrQ::Protochain => {
                let v = match (q.proto, name) {
                    // libpcap's `eproto_db` and `llc_db` (case-sensitive).
                    (Some(Proto::Link), "ip") => ETH_IP,
                    (Some(Proto::Link), "ip6") => ETH_IP6,
                    (Some(Proto::Link), "arp") => ETH_ARP,
                    (Some(Proto::Link), "rarp") => ETH_RARP,
                    (Some(Proto::Link), "atalk") => ETH_ATALK,
                    (Some(Proto::Link), "aarp") => ETH_AARP,
                    (Some(Proto::Link), "decnet") => ETH_DECNET,
                    (Some(Proto::Link), "lat") => ETH_LAT,
                    (Some(Proto::Link), "sca") => ETH_SCA,
                    (Some(Proto::Link), "moprc") => ETH_MOPRC,
                    (Some(Proto::Link), "mopdl") => ETH_MOPDL,
                    (Some(Proto::Link), "loopback") => ETH_LOOPBACK,
                    (Some(Proto::Link), "iso") => SAP_ISONS,
                    (Some(Proto::Link), "stp") => SAP_STP,
                    (Some(Proto::Link), "ipx") => SAP_IPX,
                    (Some(Proto::Link), "netbeui") => SAP_NETBEUI,
                    (Some(Proto::Link), _) => {
                        return Err(self.err(span, format!("unknown ether proto '{name}'")))
                    }
                    (Some(Proto::Iso), "clnp") => NLPID_CLNP,
                    (Some(Proto::Iso), "esis") => NLPID_ESIS,
                    (Some(Proto::Iso), "isis") => NLPID_ISIS,
                    (Some(Proto::Iso), _) => {
                        return Err(self.err(span, format!("unknown osi proto '{name}'")))
                    }
                    // Only IP-level qualifiers look names up in the IP
                    // protocol table (libpcap's `lookup_proto`).
                    (Some(p), _) if !matches!(p, Proto::Ip | Proto::Ip6) => {
                        return Err(self.err(span, format!("unknown protocol: {name}")))
                    }
                    (_, "icmp") => 1,
                    (_, "igmp") => 2,
                    (_, "tcp") => 6,
                    (_, "udp") => 17,
                    (_, "icmp6") | (_, "ipv6-icmp") => 58,
                    (_, "sctp") => 132,
                    (_, "esp") => 50,
                    (_, "ah") => 51,
                    _ => return Err(self.err(span, format!("unknown ip proto '{name}'"))),
                };
                if q.addr == AddrQ::Proto {
                    self.proto(v, q.proto, span)
                } else {
                    self.protochain(v, q.proto, span)
                }
            }
            AddrQ::Port => {
                Err(self
                    .err(span, format!("unknown port '{name}' (service names are not supported)")))
            }
            _ => {
                Err(self
                    .err(span, format!("unknown host '{name}' (name resolution is not supported)")))
            }
        }
    }

    // ------------------------------------------------------------ arithmetic

    fn relation(&mut self, op: RelOp, a: &Arith, b: &Arith, span: &Span) -> R<B> {
        let a0 = self.arith(a)?;
        let a1 = self.arith(b)?;
        let (cop, rev, swap) = match op {
            RelOp::Gt => (CmpOp::Gt, false, false),
            RelOp::Ge => (CmpOp::Ge, false, false),
            RelOp::Eq => (CmpOp::Eq, false, false),
            RelOp::Le => (CmpOp::Gt, true, false),
            RelOp::Lt => (CmpOp::Ge, true, false),
            RelOp::Ne => (CmpOp::Eq, true, false),
        };
        let _ = (swap, span);
        let mut t = B::Test(Test::Cmp(cop, a0.v, a1.v));
        if rev {
            t = B::negate(t);
        }
        // Guards for every read / division, innermost last so that each
        // guard's own reads are already guarded when it runs.
        let mut guards = Vec::new();
        self.guards(a0.v, &mut guards);
        self.guards(a1.v, &mut guards);
        for g in guards.into_iter().rev() {
            t = B::Check(g, Box::new(t));
        }
        let mut conds = a0.conds;
        conds.extend(a1.conds);
        for c in conds.into_iter().rev() {
            t = B::and(c, t);
        }
        Ok(t)
    }

    /// Guards in evaluation (post-)order.
    fn guards(&mut self, v: ValId, out: &mut Vec<Test>) {
        match self.p.get_val(v) {
            Val::Const(_) | Val::WireLen => {}
            Val::Neg(a) => self.guards(a, out),
            Val::Load { base, k, size } => {
                self.guards(base, out);
                let g = match self.p.get_val(base) {
                    Val::Const(c) => {
                        match c.checked_add(k).and_then(|x| x.checked_add(u32::from(size))) {
                            Some(end) => Test::CapGe(end),
                            None => Test::InBounds { base, k, size },
                        }
                    }
                    _ => Test::InBounds { base, k, size },
                };
                if !out.contains(&g) {
                    out.push(g);
                }
            }
            Val::Bin(op, a, b) => {
                self.guards(a, out);
                self.guards(b, out);
                if matches!(op, ArOp::Div | ArOp::Mod) {
                    let z = self.p.konst(0);
                    // "divisor > 0" as the guard: fails when zero.
                    let g = Test::Cmp(CmpOp::Gt, b, z);
                    if !out.contains(&g) {
                        out.push(g);
                    }
                }
            }
        }
    }

    fn arith(&mut self, a: &Arith) -> R<Ar> {
        Ok(match a {
            Arith::Num(n) => Ar { conds: vec![], v: self.p.konst(*n) },
            Arith::Len => Ar { conds: vec![], v: self.p.val(Val::WireLen) },
            Arith::Neg(x) => {
                let x = self.arith(x)?;
                Ar { conds: x.conds, v: self.p.val(Val::Neg(x.v)) }
            }
            Arith::Bin(op, l, r, span) => {
                if matches!(op, ArOp::Div | ArOp::Mod | ArOp::Shl | ArOp::Shr) {
                    if let Some(k) = first_leaf_literal(r) {
                        match op {
                            ArOp::Div if k == 0 => return Err(self.err(span, "division by zero")),
                            ArOp::Mod if k == 0 => return Err(self.err(span, "modulus by zero")),
                            ArOp::Shl | ArOp::Shr if k > 31 => {
                                return Err(self.err(span, "shift by more than 31 bits"))
                            }
                            _ => {}
                        }
                    }
                }
                let l = self.arith(l)?;
                let r = self.arith(r)?;
                // libpcap's gen_arth keeps only the left operand's protocol
                // conditions (`0 + ip[0]` does not require `ip`); the right
                // operand's reads are still bounds-checked.
                Ar { conds: l.conds, v: self.p.val(Val::Bin(*op, l.v, r.v)) }
            }
            Arith::Load { proto, idx, size, span } => {
                let inner = self.arith(idx)?;
                let mut conds = inner.conds;
                let nh = self.nh();
                let (base, k, cond) = match proto {
                    Proto::Link => (inner.v, 0, None),
                    Proto::Ip
                    | Proto::Ip6
                    | Proto::Arp
                    | Proto::Rarp
                    | Proto::Atalk
                    | Proto::Decnet
                    | Proto::Sca
                    | Proto::Lat
                    | Proto::Moprc
                    | Proto::Mopdl => {
                        let c = self.abbrev(*proto, span)?;
                        (inner.v, nh, Some(c))
                    }
                    Proto::Tcp
                    | Proto::Udp
                    | Proto::Sctp
                    | Proto::Icmp
                    | Proto::Igmp
                    | Proto::Igrp
                    | Proto::Pim
                    | Proto::Vrrp
                    | Proto::Carp => {
                        let hl_byte = self.load(nh, 1);
                        let m = self.p.konst(0xf);
                        let masked = self.p.val(Val::Bin(ArOp::And, hl_byte, m));
                        let two = self.p.konst(2);
                        let x = self.p.val(Val::Bin(ArOp::Shl, masked, two));
                        let base = self.p.val(Val::Bin(ArOp::Add, inner.v, x));
                        let c = self.abbrev(*proto, span)?;
                        let f = self.ipfrag();
                        // libpcap also requires plain `ip`, tested first.
                        let ip = self.abbrev(Proto::Ip, span)?;
                        conds.insert(0, ip);
                        (base, nh, Some(B::and(c, f)))
                    }
                    Proto::Icmp6 => {
                        let c = self.abbrev(Proto::Ip6, span)?;
                        let n = self.cmp(nh + 6, 1, 58);
                        conds.push(c);
                        (inner.v, nh + 40, Some(n))
                    }
                    Proto::Ah
                    | Proto::Esp
                    | Proto::Aarp
                    | Proto::Iso
                    | Proto::Esis
                    | Proto::Isis
                    | Proto::Clnp
                    | Proto::L1
                    | Proto::L2
                    | Proto::Iih
                    | Proto::Lsp
                    | Proto::Snp
                    | Proto::Csnp
                    | Proto::Psnp
                    | Proto::Stp
                    | Proto::Ipx
                    | Proto::Netbeui => {
                        return Err(self.err(
                            span,
                            format!("'{}' not supported by proto[x]", proto_name(*proto)),
                        ))
                    }
                };
                if let Some(c) = cond {
                    conds.push(c);
                }
                Ar { conds, v: self.p.val(Val::Load { base, k, size: *size }) }
            }
        })
    }
}

fn s_cmp(s: &mut Expander<'_>, op: CmpOp, v: ValId, c: u32) -> B {
    s.cmp_op(op, v, c)
}

/// libpcap checks a divisor / shift count only when the first statement of
/// its code is a literal load: that is the leftmost leaf of the operand.
fn first_leaf_literal(a: &Arith) -> Option<u32> {
    match a {
        Arith::Num(n) => Some(*n),
        Arith::Len => None,
        Arith::Load { idx, .. } => first_leaf_literal(idx),
        Arith::Bin(_, l, _, _) => first_leaf_literal(l),
        Arith::Neg(x) => first_leaf_literal(x),
    }
}

fn num_word(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub fn proto_name(p: Proto) -> &'static str {
    match p {
        Proto::Link => "link",
        Proto::Ip => "ip",
        Proto::Ip6 => "ip6",
        Proto::Arp => "arp",
        Proto::Rarp => "rarp",
        Proto::Tcp => "tcp",
        Proto::Udp => "udp",
        Proto::Sctp => "sctp",
        Proto::Icmp => "icmp",
        Proto::Icmp6 => "icmp6",
        Proto::Igmp => "igmp",
        Proto::Igrp => "igrp",
        Proto::Pim => "pim",
        Proto::Vrrp => "vrrp",
        Proto::Carp => "carp",
        Proto::Ah => "ah",
        Proto::Esp => "esp",
        Proto::Atalk => "atalk",
        Proto::Aarp => "aarp",
        Proto::Decnet => "decnet",
        Proto::Lat => "lat",
        Proto::Sca => "sca",
        Proto::Moprc => "moprc",
        Proto::Mopdl => "mopdl",
        Proto::Iso => "iso",
        Proto::Esis => "esis",
        Proto::Isis => "isis",
        Proto::Clnp => "clnp",
        Proto::L1 => "l1",
        Proto::L2 => "l2",
        Proto::Iih => "iih",
        Proto::Lsp => "lsp",
        Proto::Snp => "snp",
        Proto::Csnp => "csnp",
        Proto::Psnp => "psnp",
        Proto::Stp => "stp",
        Proto::Ipx => "ipx",
        Proto::Netbeui => "netbeui",
    }
}
