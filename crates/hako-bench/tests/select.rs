//! Every transport is found by its name, in the leader and in the
//! follower; lists of names parse, and unknown names, or names of
//! transports this build leaves out, are refused with a message that says
//! what to do.

use hako_bench::registry::{Kind, Transports};

#[test]
fn names_match_the_transports() {
    let t = Transports::default();
    for &k in Kind::ALL {
        assert_eq!(t.get(k).row_name(), k.name());
        assert_eq!(Kind::parse(k.name()), Ok(k));
    }
    let follower: Vec<&str> = t.for_follower().iter().map(|t| t.row_name()).collect();
    let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(follower, names);
    for &k in Kind::SUITE
        .iter()
        .chain(Kind::REQRES)
        .chain(Kind::ASYNC)
        .chain(Kind::BRIDGE)
    {
        assert!(Kind::ALL.contains(&k));
    }
}

#[test]
fn lists_parse_and_bad_names_are_refused() {
    assert_eq!(
        Kind::parse_list("hako, futex,hako"),
        Ok(vec![Kind::Hako, Kind::Futex])
    );
    let e = Kind::parse_list("hako,carrier-pigeon").unwrap_err();
    assert!(e.contains("unknown transport \"carrier-pigeon\""), "{e}");
    assert!(e.contains("hako-park"), "{e}");
    assert!(Kind::parse_list("").is_err());
    assert_eq!(
        Kind::parse_list("hako,hako-spin,hako-park,hako-spin-park,futex,pipe,unix,mq").unwrap(),
        [
            Kind::Hako,
            Kind::HakoSpin,
            Kind::HakoPark,
            Kind::HakoSpinPark,
            Kind::Futex,
            Kind::Pipe,
            Kind::Unix,
            Kind::Mq
        ]
    );
    #[cfg(not(feature = "peers"))]
    {
        let e = Kind::parse("iceoryx2").unwrap_err();
        assert!(e.contains("--features peers"), "{e}");
    }
    #[cfg(not(feature = "bridge"))]
    {
        let e = Kind::parse("hako-bridge").unwrap_err();
        assert!(e.contains("--features bridge"), "{e}");
        assert!(Kind::BRIDGE.is_empty());
    }
}
