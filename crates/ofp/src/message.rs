//! OpenFlow 1.3.5 messages: `struct ofp_header` and every message type
//! 0–29 (§7.1, §7.3–7.5).
//!
//! CONTRACT (filled in by the message work item). Entry points used
//! elsewhere: [`Message::parse`], [`Message::encode`], [`Header::parse`],
//! [`Message::msg_type`].

use crate::error::Result;
use crate::multipart::{MultipartReply, MultipartRequest};

/// `struct ofp_header`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    pub msg_type: u8,
    pub length: u16,
    pub xid: u32,
}

impl Header {
    pub const LEN: usize = 8;
    /// Parse the first 8 bytes (does not check version or type).
    pub fn parse(_buf: &[u8]) -> Result<Header> {
        todo!()
    }
}

/// Placeholder body types are defined by the message work item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    Hello,
    MultipartRequest(MultipartRequest),
    MultipartReply(MultipartReply),
}

impl Message {
    /// Parse one complete message (`buf` holds exactly `header.length`
    /// bytes). Returns the xid and the message.
    pub fn parse(_buf: &[u8]) -> Result<(u32, Message)> {
        todo!()
    }
    /// Encode with the given xid, including the header.
    pub fn encode(&self, _xid: u32) -> Vec<u8> {
        todo!()
    }
    /// `enum ofp_type` number.
    pub fn msg_type(&self) -> u8 {
        todo!()
    }
}
