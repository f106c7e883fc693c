pub mod ofp_print;
