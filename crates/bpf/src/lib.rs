//! eBPF filter-program engine: ELF loader, verifier, maps, helpers, interpreter and JIT.
