//! `StreamChannel`: master arbitration, PacketOut and PacketIn.
//!
//! # Arbitration (P4Runtime spec §5)
//! The first message on a stream must be a `MasterArbitrationUpdate`
//! for this device (else the stream ends with FAILED_PRECONDITION, or
//! NOT_FOUND for another device id). Clients are grouped by role name
//! (unset: the default role). Every role has full pipeline access: this
//! switch agrees on no role-definition scheme, so a `role.config` is
//! INVALID_ARGUMENT (spec §5.3), and a live stream's later update that
//! names another role or device ends it with FAILED_PRECONDITION (as
//! §5.3 says). The server remembers the highest election
//! id it has seen per role; the client holding it is the primary, and it
//! stays the highest even after that client leaves (then there is no
//! primary until a client sends an id at least as high). Every client gets
//! an update with the highest id and a status: OK for the primary,
//! ALREADY_EXISTS for a backup while a primary exists, NOT_FOUND when
//! none does. When the primary changes (a higher id arrives, or the
//! primary leaves) every client of the role is told; otherwise only the
//! sender. Two live clients with the same id: the second is refused
//! (INVALID_ARGUMENT ends its stream). A stream that ends, cleanly or not,
//! frees its slot.
//!
//! # Packets
//! A PacketOut from the primary becomes a frame: the
//! `@controller_header("packet_out")` header built from its metadata
//! (fields not given are 0) followed by the payload, injected at the CPU
//! port (bmv2's convention). Errors (no CPU port, not primary, a bad
//! metadata id or width, a full queue) come back as a `StreamError` with
//! the packet. Frames the program sends to the CPU port go to every
//! role's primary as PacketIn ([`crate::device::Device::packet_in`]), as
//! do idle-timeout notifications ([`crate::idle`]).
//!
//! # Digests
//! `DigestList`s go to every role's primary ([`crate::digest`]). A
//! `DigestListAck` from any of them clears its list from the digest
//! cache; from another client it is PERMISSION_DENIED, and for a digest
//! id the P4Info lacks INVALID_ARGUMENT (a `StreamError` with the ack).
//! Other stream messages are answered UNIMPLEMENTED. A message over the
//! size limit ends the stream with RESOURCE_EXHAUSTED ([`inbound_error`]).

use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::{Code, Status};

use crate::device::{build_header, lock, Device};
use crate::proto::google::rpc;
use crate::proto::p4::v1 as p4v1;
use p4v1::stream_message_request::Update as Req;
use p4v1::stream_message_response::Update as Resp;

pub type Tx = mpsc::Sender<Result<p4v1::StreamMessageResponse, Status>>;

/// Responses buffered per stream before packet-ins are dropped.
pub const STREAM_DEPTH: usize = 1024;

#[derive(Debug)]
struct Client {
    stream: u64,
    role: String,
    role_msg: Option<p4v1::Role>,
    election: Option<u128>,
    tx: Tx,
}

/// Who is connected, and who is primary.
#[derive(Debug, Default)]
pub struct Arbitration {
    next_stream: u64,
    clients: Vec<Client>,
    highest: std::collections::HashMap<String, u128>,
}

pub fn u128_of(e: &Option<p4v1::Uint128>) -> Option<u128> {
    e.as_ref().map(|e| u128::from(e.high) << 64 | u128::from(e.low))
}

fn uint128(v: u128) -> p4v1::Uint128 {
    p4v1::Uint128 { high: (v >> 64) as u64, low: v as u64 }
}

impl Arbitration {
    /// A fresh stream number.
    pub fn new_stream(&mut self) -> u64 {
        self.next_stream += 1;
        self.next_stream
    }

    fn primary(&self, role: &str) -> Option<&Client> {
        let h = self.highest.get(role)?;
        self.clients.iter().find(|c| c.role == role && c.election == Some(*h))
    }

    /// Whether `election` is the primary's id in `role`.
    pub fn is_primary(&self, role: &str, election: Option<u128>) -> bool {
        election.is_some() && self.primary(role).is_some_and(|p| p.election == election)
    }

    /// Whether `stream` is its role's primary.
    fn stream_is_primary(&self, stream: u64) -> bool {
        self.clients
            .iter()
            .find(|c| c.stream == stream)
            .is_some_and(|c| self.primary(&c.role).is_some_and(|p| p.stream == stream))
    }

    /// The primary of every role, in the order the clients joined. Every
    /// role has full pipeline access (a `role.config` is refused), so
    /// each of them gets packet-ins and notifications.
    fn primaries(&self) -> impl Iterator<Item = &Client> {
        self.clients.iter().filter(|c| self.primary(&c.role).is_some_and(|p| p.stream == c.stream))
    }

    /// The streams of every role's primary.
    pub fn primaries_tx(&self) -> Vec<Tx> {
        self.primaries().map(|p| p.tx.clone()).collect()
    }

    /// Sends to every role's primary; false if none took it (there is no
    /// primary, or every primary's stream is full).
    pub fn send_to_primaries(&self, msg: p4v1::StreamMessageResponse) -> bool {
        let mut sent = false;
        for p in self.primaries() {
            sent |= p.tx.try_send(Ok(msg.clone())).is_ok();
        }
        sent
    }

    fn update_for(&self, c: &Client, device_id: u64) -> p4v1::StreamMessageResponse {
        let primary = self.primary(&c.role).map(|p| p.stream);
        let (code, message) = match primary {
            Some(s) if s == c.stream => (Code::Ok, "primary"),
            Some(_) => (Code::AlreadyExists, "a primary is connected; this client is a backup"),
            None => (Code::NotFound, "no primary is connected"),
        };
        let upd = p4v1::MasterArbitrationUpdate {
            device_id,
            role: c.role_msg.clone(),
            election_id: self.highest.get(&c.role).map(|h| uint128(*h)),
            status: Some(rpc::Status {
                code: code as i32,
                message: message.into(),
                details: vec![],
            }),
        };
        p4v1::StreamMessageResponse { update: Some(Resp::Arbitration(upd)) }
    }

    fn notify(&self, role: &str, device_id: u64, only: Option<u64>) {
        for c in self.clients.iter().filter(|c| c.role == role) {
            if only.is_none_or(|s| s == c.stream) {
                // A full stream misses an advisory; its next request
                // still sees the truth.
                let _ = c.tx.try_send(Ok(self.update_for(c, device_id)));
            }
        }
    }

    /// Handles an arbitration update on `stream`.
    pub fn arbitrate(
        &mut self,
        stream: u64,
        device_id: u64,
        upd: &p4v1::MasterArbitrationUpdate,
        tx: &Tx,
    ) -> Result<(), Status> {
        let role_msg = upd.role.clone();
        let role = role_msg.as_ref().map(|r| r.name.clone()).unwrap_or_default();
        if let Some(cfg) = role_msg.as_ref().and_then(|r| r.config.as_ref()) {
            return Err(Status::invalid_argument(format!(
                "role `{role}`: role.config ({}) is not supported: every role has full \
                 pipeline access on this switch, so leave role.config unset",
                cfg.type_url
            )));
        }
        let old_role = self.clients.iter().find(|c| c.stream == stream).map(|c| c.role.clone());
        if let Some(old) = old_role.as_ref().filter(|o| **o != role) {
            return Err(Status::failed_precondition(format!(
                "this stream's role is `{old}`, not `{role}`: open a new stream to change role"
            )));
        }
        let election = u128_of(&upd.election_id);
        if let Some(e) = election {
            if self
                .clients
                .iter()
                .any(|c| c.stream != stream && c.role == role && c.election == Some(e))
            {
                return Err(Status::invalid_argument(format!(
                    "election id {e} is already used by another client of role `{role}`"
                )));
            }
        }
        let before = self.primary(&role).map(|p| p.stream);
        self.clients.retain(|c| c.stream != stream);
        self.clients.push(Client {
            stream,
            role: role.clone(),
            role_msg,
            election,
            tx: tx.clone(),
        });
        if let Some(e) = election {
            let h = self.highest.entry(role.clone()).or_insert(e);
            *h = (*h).max(e);
        }
        let after = self.primary(&role).map(|p| p.stream);
        if before != after {
            self.notify(&role, device_id, None);
        } else {
            self.notify(&role, device_id, Some(stream));
        }
        Ok(())
    }

    /// A stream ended: its slot is free; if it was primary, the role is told.
    pub fn leave(&mut self, stream: u64, device_id: u64) {
        let Some(i) = self.clients.iter().position(|c| c.stream == stream) else { return };
        let was_primary = self.stream_is_primary(stream);
        let c = self.clients.remove(i);
        if was_primary {
            self.notify(&c.role, device_id, None);
        }
    }
}

fn stream_error(
    code: Code,
    message: String,
    pkt: Option<p4v1::PacketOut>,
) -> p4v1::StreamMessageResponse {
    let details = pkt.map(|p| {
        p4v1::stream_error::Details::PacketOut(p4v1::PacketOutError { packet_out: Some(p) })
    });
    p4v1::StreamMessageResponse {
        update: Some(Resp::Error(p4v1::StreamError {
            canonical_code: code as i32,
            message,
            details,
            ..Default::default()
        })),
    }
}

fn ack_error(code: Code, message: String, a: p4v1::DigestListAck) -> p4v1::StreamMessageResponse {
    let details = p4v1::stream_error::Details::DigestListAck(p4v1::DigestListAckError {
        digest_list_ack: Some(a),
    });
    p4v1::StreamMessageResponse {
        update: Some(Resp::Error(p4v1::StreamError {
            canonical_code: code as i32,
            message,
            details: Some(details),
            ..Default::default()
        })),
    }
}

/// The status ending a stream whose next message could not be read:
/// one over [`crate::server::MAX_MESSAGE`] (tonic's OUT_OF_RANGE "decoded
/// message length too large", found from the length prefix before the
/// body is read) is RESOURCE_EXHAUSTED, as for unary calls
/// ([`crate::server::resource_exhausted`]); others keep tonic's status.
pub fn inbound_error(e: Status) -> Status {
    if e.code() == Code::OutOfRange && e.message().contains("message length too large") {
        Status::resource_exhausted(format!(
            "a StreamChannel message is over the {} byte limit: {}",
            crate::server::MAX_MESSAGE,
            e.message()
        ))
    } else {
        e
    }
}

/// Runs one client's stream until it ends.
pub async fn run(
    device: Arc<Device>,
    mut inbound: tonic::Streaming<p4v1::StreamMessageRequest>,
    tx: Tx,
) {
    let device_id = device.config.device_id;
    let stream = lock(&device.arb).new_stream();
    let mut joined = false;
    loop {
        let msg = match inbound.message().await {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(e) => {
                // The stream's status for a message the server refused
                // (a client that vanished reads nothing).
                let _ = tx.send(Err(inbound_error(e))).await;
                break;
            }
        };
        match msg.update {
            Some(Req::Arbitration(upd)) => {
                if upd.device_id != device_id {
                    // Spec §5.3: NOT_FOUND on a new stream; a live one
                    // cannot move to another device (FAILED_PRECONDITION).
                    let why = format!(
                        "no device with id {} (this switch is device {device_id})",
                        upd.device_id
                    );
                    let status = if joined {
                        Status::failed_precondition(why)
                    } else {
                        Status::not_found(why)
                    };
                    let _ = tx.send(Err(status)).await;
                    break;
                }
                let r = lock(&device.arb).arbitrate(stream, device_id, &upd, &tx);
                match r {
                    Ok(()) => joined = true,
                    Err(s) => {
                        let _ = tx.send(Err(s)).await;
                        break;
                    }
                }
            }
            _ if !joined => {
                let _ = tx
                    .send(Err(Status::failed_precondition(
                        "the first message on a stream must be a MasterArbitrationUpdate",
                    )))
                    .await;
                break;
            }
            Some(Req::Packet(p)) => {
                if let Err((code, why)) = packet_out(&device, stream, &p) {
                    let _ = tx.try_send(Ok(stream_error(code, why, Some(p))));
                }
            }
            Some(Req::DigestAck(a)) => {
                let r = if lock(&device.arb).stream_is_primary(stream) {
                    lock(&device.digests).ack(&a).map_err(|e| (e.code, e.message))
                } else {
                    Err((Code::PermissionDenied, "only the primary client may ack digests".into()))
                };
                if let Err((code, why)) = r {
                    let _ = tx.try_send(Ok(ack_error(code, why, a)));
                }
            }
            Some(Req::Other(_)) | None => {
                let _ = tx.try_send(Ok(stream_error(
                    Code::Unimplemented,
                    "unknown stream message".into(),
                    None,
                )));
            }
        }
    }
    lock(&device.arb).leave(stream, device_id);
}

fn packet_out(device: &Device, stream: u64, p: &p4v1::PacketOut) -> Result<(), (Code, String)> {
    if !lock(&device.arb).stream_is_primary(stream) {
        return Err((Code::PermissionDenied, "only the primary client may send packets".into()));
    }
    if device.config.cpu_port.is_none() {
        return Err((
            Code::FailedPrecondition,
            "the switch has no CPU port (start `sluice p4 run` with --cpu-port N)".into(),
        ));
    }
    let pipeline = device
        .pipeline()
        .ok_or((Code::FailedPrecondition, "no forwarding pipeline is loaded".to_string()))?;
    let mut frame = match &pipeline.packet_out {
        Some(h) => build_header(h, &p.metadata).map_err(|e| (e.code, e.message))?,
        None if p.metadata.is_empty() => Vec::new(),
        None => {
            return Err((
                Code::InvalidArgument,
                "the program has no @controller_header(\"packet_out\") header for metadata".into(),
            ))
        }
    };
    frame.extend_from_slice(&p.payload);
    if !device.queue_packet_out(frame) {
        return Err((Code::ResourceExhausted, "the packet-out queue is full".into()));
    }
    Ok(())
}
