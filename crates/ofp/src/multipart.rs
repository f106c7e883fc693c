//! Multipart requests and replies (OpenFlow 1.3.5 §7.3.5), table features,
//! and reassembly of messages split with `OFPMPF_REQ_MORE`/`REPLY_MORE`.
//!
//! CONTRACT (filled in by the multipart work item). `message` calls
//! `MultipartRequest::parse(body)` / `emit` with `body` = the bytes after the
//! 8-byte OpenFlow header.

use crate::error::Result;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartRequest {
    /// `OFPMPF_REQ_MORE` etc.
    pub flags: u16,
    pub body: MultipartRequestBody,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultipartReply {
    pub flags: u16,
    pub body: MultipartReplyBody,
}

/// Placeholder: the multipart work item defines the real variants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultipartRequestBody {
    Desc,
}

/// Placeholder: the multipart work item defines the real variants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultipartReplyBody {
    Desc,
}

impl MultipartRequest {
    pub fn parse(_body: &[u8]) -> Result<Self> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
}

impl MultipartReply {
    pub fn parse(_body: &[u8]) -> Result<Self> {
        todo!()
    }
    pub fn emit(&self, _out: &mut Vec<u8>) {
        todo!()
    }
}
