pub mod bpf;
pub mod ctl;
pub mod demo;
pub mod filter;
pub mod ofp_print;
pub mod replay;
pub mod run;
pub mod trace;
