//! Compiles the vendored P4Runtime protos (`proto/`, see `proto/README.md`)
//! into Rust: `protox` parses them (no `protoc` needed), `tonic-prost-build`
//! writes the messages and the `P4Runtime` service.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = ["p4/v1/p4runtime.proto"];
    let fds = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure().build_client(true).build_server(true).compile_fds(fds)?;
    println!("cargo:rerun-if-changed=proto");
    Ok(())
}
