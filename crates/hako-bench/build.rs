//! Compiles the `hako-c` transport's C side (c/pingpong.c) against hako's
//! C API header; the functions it calls come from the hako-ffi crate,
//! linked in as a Rust library.

fn main() {
    println!("cargo:rerun-if-changed=c/pingpong.c");
    println!("cargo:rerun-if-changed=../hako-ffi/include/hako.h");
    cc::Build::new()
        .file("c/pingpong.c")
        .include("../hako-ffi/include")
        .std("c11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("hako_bench_pingpong");
}
