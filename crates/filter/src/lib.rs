//! pcap-filter language and pfmatch programs: parser, optimiser, interpreter and Cranelift backend.
