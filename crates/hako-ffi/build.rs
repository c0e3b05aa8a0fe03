//! Gives libhako_c.so a versioned SONAME (`libhako_c.so.0.1` while the
//! major version is 0, whose minor releases may change the ABI), so that
//! programs linked against it record that name rather than the library's
//! path, and find it through their rpath or the loader's search path.

fn main() {
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    let minor = env!("CARGO_PKG_VERSION_MINOR");
    let soname = if major == "0" {
        format!("libhako_c.so.{major}.{minor}")
    } else {
        format!("libhako_c.so.{major}")
    };
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
    println!("cargo:rustc-env=HAKO_C_SONAME={soname}");
    println!("cargo:rerun-if-changed=build.rs");
}
