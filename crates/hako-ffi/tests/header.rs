//! The checked-in C header, `include/hako.h`, is what cbindgen makes of
//! the sources now. After changing the C API, regenerate it with
//! `HAKO_BLESS=1 cargo test -p hako-ffi --test header` (scripts/c does).

use std::path::Path;

#[test]
fn the_checked_in_header_is_current() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).unwrap();
    let mut fresh = Vec::new();
    cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen cannot read the sources")
        .write(&mut fresh);
    let fresh = String::from_utf8(fresh).unwrap();
    let path = dir.join("include/hako.h");
    if std::env::var_os("HAKO_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == fresh,
        "{} is out of date: regenerate it with \
         `HAKO_BLESS=1 cargo test -p hako-ffi --test header`",
        path.display()
    );
}
