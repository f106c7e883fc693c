//! Numeric constants of OpenFlow 1.3.5 that several modules share.

/// Wire version of OpenFlow 1.3.
pub const OFP_VERSION: u8 = 0x04;
/// Length of `struct ofp_header`.
pub const OFP_HEADER_LEN: usize = 8;
/// Bytes of an offending message echoed back in an `OFPT_ERROR`.
pub const ERROR_DATA_LEN: usize = 64;
/// `OFP_NO_BUFFER`.
pub const OFP_NO_BUFFER: u32 = 0xffff_ffff;
/// Default `miss_send_len` (`OFPCML_...` in §7.3.2).
pub const OFP_DEFAULT_MISS_SEND_LEN: u16 = 128;
/// `OFPCML_MAX` and `OFPCML_NO_BUFFER`.
pub const OFPCML_MAX: u16 = 0xffe5;
pub const OFPCML_NO_BUFFER: u16 = 0xffff;
pub const OFP_MAX_TABLE_NAME_LEN: usize = 32;
pub const OFP_MAX_PORT_NAME_LEN: usize = 16;
pub const DESC_STR_LEN: usize = 256;
pub const SERIAL_NUM_LEN: usize = 32;
pub const OFP_ETH_ALEN: usize = 6;

/// Reserved port numbers (`enum ofp_port_no`).
pub mod port_no {
    pub const MAX: u32 = 0xffff_ff00;
    pub const IN_PORT: u32 = 0xffff_fff8;
    pub const TABLE: u32 = 0xffff_fff9;
    pub const NORMAL: u32 = 0xffff_fffa;
    pub const FLOOD: u32 = 0xffff_fffb;
    pub const ALL: u32 = 0xffff_fffc;
    pub const CONTROLLER: u32 = 0xffff_fffd;
    pub const LOCAL: u32 = 0xffff_fffe;
    pub const ANY: u32 = 0xffff_ffff;
}

/// Table numbers (`enum ofp_table`).
pub mod table_id {
    pub const MAX: u8 = 0xfe;
    pub const ALL: u8 = 0xff;
}

/// Group numbers (`enum ofp_group`).
pub mod group_id {
    pub const MAX: u32 = 0xffff_ff00;
    pub const ALL: u32 = 0xffff_fffc;
    pub const ANY: u32 = 0xffff_ffff;
}

/// Meter numbers (`enum ofp_meter`).
pub mod meter_id {
    pub const MAX: u32 = 0xffff_0000;
    pub const SLOWPATH: u32 = 0xffff_fffd;
    pub const CONTROLLER: u32 = 0xffff_fffe;
    pub const ALL: u32 = 0xffff_ffff;
}

/// Queue numbers.
pub mod queue_id {
    pub const ALL: u32 = 0xffff_ffff;
}

/// `enum ofp_vlan_id`.
pub const OFPVID_PRESENT: u16 = 0x1000;
pub const OFPVID_NONE: u16 = 0x0000;

/// sluice's own OpenFlow experimenter id: ASCII "SLIC". The most significant
/// byte is non-zero, which marks it as not an IEEE OUI (OpenFlow 1.3.5
/// §7.2.5); no known vendor uses this value (Nicira 0x00002320, ONF
/// 0x4f4e4600, BSN 0x005c16c7).
pub const SLUICE_EXPERIMENTER_ID: u32 = 0x534c_4943;
