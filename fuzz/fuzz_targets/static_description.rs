//! A service's static.toml as anyone with access to the domain root may have
//! written it: parsing must never panic, and a description it accepts must
//! survive a round trip through TOML unchanged.
#![no_main]

use hako::StaticDescription;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(desc) = StaticDescription::parse(text) {
        let again = toml::to_string(&desc).expect("a parsed description serialises");
        assert_eq!(StaticDescription::parse(&again), Ok(desc));
    }
});
