//! OpenFlow 1.3.5 error types and codes (spec §7.4.4, `enum ofp_error_type`
//! and the per-type code enums).
//!
//! Every decode failure in this crate is an [`ErrorCode`]: the exact
//! `OFPT_ERROR` type/code pair the switch must answer with. The constant names
//! mirror the spec's with the `OFP` prefix dropped, so `OFPBRC_BAD_LEN` is
//! [`ErrorCode::BRC_BAD_LEN`] and `OFPBMC_BAD_PREREQ` is
//! [`ErrorCode::BMC_BAD_PREREQ`]. Unknown type/code pairs received from a peer
//! are kept as they are (`ErrorCode::new(ty, code)` with no name).

use core::fmt;

/// An OpenFlow error `type`/`code` pair.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode {
    pub ty: u16,
    pub code: u16,
}

/// `OFPET_EXPERIMENTER`.
pub const OFPET_EXPERIMENTER: u16 = 0xffff;

macro_rules! error_codes {
    ($( $tyn:literal $tyname:literal { $( $konst:ident = $code:literal $cname:literal, )* } )*) => {
        impl ErrorCode {
            $($(
                #[doc = concat!("`", $tyname, "` / `", $cname, "`")]
                pub const $konst: ErrorCode = ErrorCode { ty: $tyn, code: $code };
            )*)*

            /// The spec names of this type and code, e.g.
            /// `("OFPET_BAD_REQUEST", Some("OFPBRC_BAD_LEN"))`.
            pub fn names(self) -> Option<(&'static str, Option<&'static str>)> {
                match self.ty {
                    $( $tyn => Some(($tyname, match self.code {
                        $( $code => Some($cname), )*
                        _ => None,
                    })), )*
                    OFPET_EXPERIMENTER => Some(("OFPET_EXPERIMENTER", None)),
                    _ => None,
                }
            }

            /// Every named code, for exhaustive tests.
            pub const ALL: &'static [ErrorCode] = &[ $($( ErrorCode::$konst, )*)* ];
        }
    };
}

error_codes! {
    0 "OFPET_HELLO_FAILED" {
        HFC_INCOMPATIBLE = 0 "OFPHFC_INCOMPATIBLE",
        HFC_EPERM = 1 "OFPHFC_EPERM",
    }
    1 "OFPET_BAD_REQUEST" {
        BRC_BAD_VERSION = 0 "OFPBRC_BAD_VERSION",
        BRC_BAD_TYPE = 1 "OFPBRC_BAD_TYPE",
        BRC_BAD_MULTIPART = 2 "OFPBRC_BAD_MULTIPART",
        BRC_BAD_EXPERIMENTER = 3 "OFPBRC_BAD_EXPERIMENTER",
        BRC_BAD_EXP_TYPE = 4 "OFPBRC_BAD_EXP_TYPE",
        BRC_EPERM = 5 "OFPBRC_EPERM",
        BRC_BAD_LEN = 6 "OFPBRC_BAD_LEN",
        BRC_BUFFER_EMPTY = 7 "OFPBRC_BUFFER_EMPTY",
        BRC_BUFFER_UNKNOWN = 8 "OFPBRC_BUFFER_UNKNOWN",
        BRC_BAD_TABLE_ID = 9 "OFPBRC_BAD_TABLE_ID",
        BRC_IS_SLAVE = 10 "OFPBRC_IS_SLAVE",
        BRC_BAD_PORT = 11 "OFPBRC_BAD_PORT",
        BRC_BAD_PACKET = 12 "OFPBRC_BAD_PACKET",
        BRC_MULTIPART_BUFFER_OVERFLOW = 13 "OFPBRC_MULTIPART_BUFFER_OVERFLOW",
    }
    2 "OFPET_BAD_ACTION" {
        BAC_BAD_TYPE = 0 "OFPBAC_BAD_TYPE",
        BAC_BAD_LEN = 1 "OFPBAC_BAD_LEN",
        BAC_BAD_EXPERIMENTER = 2 "OFPBAC_BAD_EXPERIMENTER",
        BAC_BAD_EXP_TYPE = 3 "OFPBAC_BAD_EXP_TYPE",
        BAC_BAD_OUT_PORT = 4 "OFPBAC_BAD_OUT_PORT",
        BAC_BAD_ARGUMENT = 5 "OFPBAC_BAD_ARGUMENT",
        BAC_EPERM = 6 "OFPBAC_EPERM",
        BAC_TOO_MANY = 7 "OFPBAC_TOO_MANY",
        BAC_BAD_QUEUE = 8 "OFPBAC_BAD_QUEUE",
        BAC_BAD_OUT_GROUP = 9 "OFPBAC_BAD_OUT_GROUP",
        BAC_MATCH_INCONSISTENT = 10 "OFPBAC_MATCH_INCONSISTENT",
        BAC_UNSUPPORTED_ORDER = 11 "OFPBAC_UNSUPPORTED_ORDER",
        BAC_BAD_TAG = 12 "OFPBAC_BAD_TAG",
        BAC_BAD_SET_TYPE = 13 "OFPBAC_BAD_SET_TYPE",
        BAC_BAD_SET_LEN = 14 "OFPBAC_BAD_SET_LEN",
        BAC_BAD_SET_ARGUMENT = 15 "OFPBAC_BAD_SET_ARGUMENT",
    }
    3 "OFPET_BAD_INSTRUCTION" {
        BIC_UNKNOWN_INST = 0 "OFPBIC_UNKNOWN_INST",
        BIC_UNSUP_INST = 1 "OFPBIC_UNSUP_INST",
        BIC_BAD_TABLE_ID = 2 "OFPBIC_BAD_TABLE_ID",
        BIC_UNSUP_METADATA = 3 "OFPBIC_UNSUP_METADATA",
        BIC_UNSUP_METADATA_MASK = 4 "OFPBIC_UNSUP_METADATA_MASK",
        BIC_BAD_EXPERIMENTER = 5 "OFPBIC_BAD_EXPERIMENTER",
        BIC_BAD_EXP_TYPE = 6 "OFPBIC_BAD_EXP_TYPE",
        BIC_BAD_LEN = 7 "OFPBIC_BAD_LEN",
        BIC_EPERM = 8 "OFPBIC_EPERM",
    }
    4 "OFPET_BAD_MATCH" {
        BMC_BAD_TYPE = 0 "OFPBMC_BAD_TYPE",
        BMC_BAD_LEN = 1 "OFPBMC_BAD_LEN",
        BMC_BAD_TAG = 2 "OFPBMC_BAD_TAG",
        BMC_BAD_DL_ADDR_MASK = 3 "OFPBMC_BAD_DL_ADDR_MASK",
        BMC_BAD_NW_ADDR_MASK = 4 "OFPBMC_BAD_NW_ADDR_MASK",
        BMC_BAD_WILDCARDS = 5 "OFPBMC_BAD_WILDCARDS",
        BMC_BAD_FIELD = 6 "OFPBMC_BAD_FIELD",
        BMC_BAD_VALUE = 7 "OFPBMC_BAD_VALUE",
        BMC_BAD_MASK = 8 "OFPBMC_BAD_MASK",
        BMC_BAD_PREREQ = 9 "OFPBMC_BAD_PREREQ",
        BMC_DUP_FIELD = 10 "OFPBMC_DUP_FIELD",
        BMC_EPERM = 11 "OFPBMC_EPERM",
    }
    5 "OFPET_FLOW_MOD_FAILED" {
        FMFC_UNKNOWN = 0 "OFPFMFC_UNKNOWN",
        FMFC_TABLE_FULL = 1 "OFPFMFC_TABLE_FULL",
        FMFC_BAD_TABLE_ID = 2 "OFPFMFC_BAD_TABLE_ID",
        FMFC_OVERLAP = 3 "OFPFMFC_OVERLAP",
        FMFC_EPERM = 4 "OFPFMFC_EPERM",
        FMFC_BAD_TIMEOUT = 5 "OFPFMFC_BAD_TIMEOUT",
        FMFC_BAD_COMMAND = 6 "OFPFMFC_BAD_COMMAND",
        FMFC_BAD_FLAGS = 7 "OFPFMFC_BAD_FLAGS",
    }
    6 "OFPET_GROUP_MOD_FAILED" {
        GMFC_GROUP_EXISTS = 0 "OFPGMFC_GROUP_EXISTS",
        GMFC_INVALID_GROUP = 1 "OFPGMFC_INVALID_GROUP",
        GMFC_WEIGHT_UNSUPPORTED = 2 "OFPGMFC_WEIGHT_UNSUPPORTED",
        GMFC_OUT_OF_GROUPS = 3 "OFPGMFC_OUT_OF_GROUPS",
        GMFC_OUT_OF_BUCKETS = 4 "OFPGMFC_OUT_OF_BUCKETS",
        GMFC_CHAINING_UNSUPPORTED = 5 "OFPGMFC_CHAINING_UNSUPPORTED",
        GMFC_WATCH_UNSUPPORTED = 6 "OFPGMFC_WATCH_UNSUPPORTED",
        GMFC_LOOP = 7 "OFPGMFC_LOOP",
        GMFC_UNKNOWN_GROUP = 8 "OFPGMFC_UNKNOWN_GROUP",
        GMFC_CHAINED_GROUP = 9 "OFPGMFC_CHAINED_GROUP",
        GMFC_BAD_TYPE = 10 "OFPGMFC_BAD_TYPE",
        GMFC_BAD_COMMAND = 11 "OFPGMFC_BAD_COMMAND",
        GMFC_BAD_BUCKET = 12 "OFPGMFC_BAD_BUCKET",
        GMFC_BAD_WATCH = 13 "OFPGMFC_BAD_WATCH",
        GMFC_EPERM = 14 "OFPGMFC_EPERM",
    }
    7 "OFPET_PORT_MOD_FAILED" {
        PMFC_BAD_PORT = 0 "OFPPMFC_BAD_PORT",
        PMFC_BAD_HW_ADDR = 1 "OFPPMFC_BAD_HW_ADDR",
        PMFC_BAD_CONFIG = 2 "OFPPMFC_BAD_CONFIG",
        PMFC_BAD_ADVERTISE = 3 "OFPPMFC_BAD_ADVERTISE",
        PMFC_EPERM = 4 "OFPPMFC_EPERM",
    }
    8 "OFPET_TABLE_MOD_FAILED" {
        TMFC_BAD_TABLE = 0 "OFPTMFC_BAD_TABLE",
        TMFC_BAD_CONFIG = 1 "OFPTMFC_BAD_CONFIG",
        TMFC_EPERM = 2 "OFPTMFC_EPERM",
    }
    9 "OFPET_QUEUE_OP_FAILED" {
        QOFC_BAD_PORT = 0 "OFPQOFC_BAD_PORT",
        QOFC_BAD_QUEUE = 1 "OFPQOFC_BAD_QUEUE",
        QOFC_EPERM = 2 "OFPQOFC_EPERM",
    }
    10 "OFPET_SWITCH_CONFIG_FAILED" {
        SCFC_BAD_FLAGS = 0 "OFPSCFC_BAD_FLAGS",
        SCFC_BAD_LEN = 1 "OFPSCFC_BAD_LEN",
        SCFC_EPERM = 2 "OFPSCFC_EPERM",
    }
    11 "OFPET_ROLE_REQUEST_FAILED" {
        RRFC_STALE = 0 "OFPRRFC_STALE",
        RRFC_UNSUP = 1 "OFPRRFC_UNSUP",
        RRFC_BAD_ROLE = 2 "OFPRRFC_BAD_ROLE",
    }
    12 "OFPET_METER_MOD_FAILED" {
        MMFC_UNKNOWN = 0 "OFPMMFC_UNKNOWN",
        MMFC_METER_EXISTS = 1 "OFPMMFC_METER_EXISTS",
        MMFC_INVALID_METER = 2 "OFPMMFC_INVALID_METER",
        MMFC_UNKNOWN_METER = 3 "OFPMMFC_UNKNOWN_METER",
        MMFC_BAD_COMMAND = 4 "OFPMMFC_BAD_COMMAND",
        MMFC_BAD_FLAGS = 5 "OFPMMFC_BAD_FLAGS",
        MMFC_BAD_RATE = 6 "OFPMMFC_BAD_RATE",
        MMFC_BAD_BURST = 7 "OFPMMFC_BAD_BURST",
        MMFC_BAD_BAND = 8 "OFPMMFC_BAD_BAND",
        MMFC_BAD_BAND_VALUE = 9 "OFPMMFC_BAD_BAND_VALUE",
        MMFC_OUT_OF_METERS = 10 "OFPMMFC_OUT_OF_METERS",
        MMFC_OUT_OF_BANDS = 11 "OFPMMFC_OUT_OF_BANDS",
    }
    13 "OFPET_TABLE_FEATURES_FAILED" {
        TFFC_BAD_TABLE = 0 "OFPTFFC_BAD_TABLE",
        TFFC_BAD_METADATA = 1 "OFPTFFC_BAD_METADATA",
        TFFC_BAD_TYPE = 2 "OFPTFFC_BAD_TYPE",
        TFFC_BAD_LEN = 3 "OFPTFFC_BAD_LEN",
        TFFC_BAD_ARGUMENT = 4 "OFPTFFC_BAD_ARGUMENT",
        TFFC_EPERM = 5 "OFPTFFC_EPERM",
    }
}

impl ErrorCode {
    pub const fn new(ty: u16, code: u16) -> Self {
        ErrorCode { ty, code }
    }

    /// ovs-ofctl style short type name, e.g. `OFPET_BAD_MATCH` -> `OFPBMC`.
    pub fn type_name(self) -> Option<&'static str> {
        self.names().map(|(t, _)| t)
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.names() {
            Some((_, Some(code))) => f.write_str(code),
            Some((ty, None)) => write!(f, "{ty}(code={})", self.code),
            None => write!(f, "OFPET_UNKNOWN(type={}, code={})", self.ty, self.code),
        }
    }
}

impl std::error::Error for ErrorCode {}

/// Result of every decoder in this crate.
pub type Result<T> = core::result::Result<T, ErrorCode>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_spec_numbers() {
        assert_eq!(ErrorCode::BRC_BAD_LEN, ErrorCode::new(1, 6));
        assert_eq!(ErrorCode::BMC_DUP_FIELD, ErrorCode::new(4, 10));
        assert_eq!(ErrorCode::GMFC_EPERM, ErrorCode::new(6, 14));
        assert_eq!(ErrorCode::TFFC_EPERM, ErrorCode::new(13, 5));
        assert_eq!(ErrorCode::BMC_BAD_PREREQ.to_string(), "OFPBMC_BAD_PREREQ");
        assert_eq!(ErrorCode::new(1, 99).to_string(), "OFPET_BAD_REQUEST(code=99)");
        assert_eq!(ErrorCode::new(77, 1).to_string(), "OFPET_UNKNOWN(type=77, code=1)");
    }

    #[test]
    fn every_named_code_is_unique() {
        let mut all = ErrorCode::ALL.to_vec();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), ErrorCode::ALL.len());
        assert_eq!(all.len(), 2 + 14 + 16 + 9 + 12 + 8 + 15 + 5 + 3 + 3 + 3 + 3 + 12 + 6);
    }
}
