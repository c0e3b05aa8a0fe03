//! Fixed-capacity strings and vectors travel inside a payload: a struct
//! that holds them derives ShmSafe, crosses a service, and reads back the
//! same.

use hako::{Config, FixedString, FixedVec, NodeBuilder, ShmSafe};

#[derive(Debug, Clone, Copy, PartialEq, Default, ShmSafe)]
#[repr(C)]
struct Report {
    id: u32,
    name: FixedString<24>,
    readings: FixedVec<f32, 6>,
}

#[test]
fn fixed_strings_and_vectors_cross_a_service() {
    let root = std::path::PathBuf::from(format!("/dev/shm/hako-test-fixed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    {
        let node = NodeBuilder::new()
            .config(&Config::default().with_root(&root))
            .create()
            .unwrap();
        let svc = node
            .service_builder(&"test/fixed".try_into().unwrap())
            .publish_subscribe::<Report>()
            .open_or_create()
            .unwrap();
        // A payload of one of them alone is named with its capacity.
        assert_eq!(FixedString::<24>::type_name(), "hako::FixedString<24>");
        let publisher = svc.publisher_builder().create().unwrap();
        let subscriber = svc.subscriber_builder().create().unwrap();
        let sent = Report {
            id: 9,
            name: FixedString::new("left wheel").unwrap(),
            readings: FixedVec::from_slice(&[1.5, 2.5, 3.5]).unwrap(),
        };
        publisher.send_copy(sent).unwrap();
        let got = subscriber.receive().unwrap().unwrap();
        assert_eq!(*got, sent);
        assert_eq!(got.name.as_str(), Ok("left wheel"));
        assert_eq!(got.readings.as_slice().unwrap(), &[1.5, 2.5, 3.5]);
    }
    let _ = std::fs::remove_dir_all(&root);
}
