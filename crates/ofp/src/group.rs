//! Groups and buckets (OpenFlow 1.3.5 §7.3.4.2).
//!
//! CONTRACT (filled in by the multipart work item; GroupMod itself is in
//! `message`).

use crate::action::Action;
use crate::error::Result;
use crate::wire::Reader;

/// `enum ofp_group_type`; unknown values preserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupType {
    All,
    Select,
    Indirect,
    FastFailover,
    Unknown(u8),
}

/// `struct ofp_bucket`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bucket {
    pub weight: u16,
    pub watch_port: u32,
    pub watch_group: u32,
    pub actions: Vec<Action>,
}

impl Bucket {
    pub fn parse(_r: &mut Reader<'_>) -> Result<Bucket> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
    pub fn wire_len(&self) -> usize {
        todo!()
    }
    /// Parse a bucket list occupying all of `buf`.
    pub fn parse_list(_buf: &[u8]) -> Result<Vec<Bucket>> {
        todo!()
    }
}
