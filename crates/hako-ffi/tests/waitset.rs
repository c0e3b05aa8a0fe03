//! The waitset through the C API: a subscriber, a listener, a server and
//! an interval in one wait; events handed out in pieces; attached ports
//! refuse to drop until the waitset goes.

use std::ptr::{null, null_mut};

use hako_c::*;

mod common;
use common::{node, ok, Root};

#[test]
fn one_wait_covers_ports_and_timers_and_attached_ports_stay() {
    let root = Root::new("waitset");
    let mut n = node(&root);
    let bytes = hako_payload_bytes();
    let mut topic = null_mut();
    ok!(hako_pubsub_service_open(
        n,
        c"ws/topic".as_ptr(),
        &bytes,
        null(),
        hako_open_mode::HAKO_OPEN_OR_CREATE,
        &mut topic
    ));
    let po = hako_publisher_options {
        max_slice_len: 16,
        max_loans: 1,
        backpressure: hako_backpressure::HAKO_BACKPRESSURE_BLOCK,
        retries: 0,
    };
    let (mut publisher, mut subscriber) = (null_mut(), null_mut());
    ok!(hako_publisher_create(topic, &po, &mut publisher));
    ok!(hako_subscriber_create(topic, null(), &mut subscriber));
    let eo = hako_event_options {
        event_id_max: 3,
        ..Default::default()
    };
    let mut bell = null_mut();
    ok!(hako_event_service_open(
        n,
        c"ws/bell".as_ptr(),
        &eo,
        hako_open_mode::HAKO_OPEN_OR_CREATE,
        &mut bell
    ));
    let (mut notifier, mut listener) = (null_mut(), null_mut());
    ok!(hako_notifier_create(bell, &mut notifier));
    ok!(hako_listener_create(
        bell,
        hako_wait_strategy::HAKO_WAIT_PARK,
        &mut listener
    ));

    let mut ws = null_mut();
    ok!(hako_waitset_create(&mut ws));
    let (mut sub_id, mut lis_id, mut tick_id, mut dl_id) = (99, 99, 99, 99);
    ok!(hako_waitset_attach_subscriber(ws, subscriber, &mut sub_id));
    ok!(hako_waitset_attach_listener(ws, listener, &mut lis_id));
    ok!(hako_waitset_attach_interval(ws, 5_000, &mut tick_id));
    ok!(hako_waitset_attach_deadline(
        ws, sub_id, 60_000_000, &mut dl_id
    ));
    assert_eq!((sub_id, lis_id, tick_id, dl_id), (0, 1, 2, 3));
    // SAFETY: a live waitset; a timer cannot carry a deadline.
    let s = unsafe { hako_waitset_attach_deadline(ws, tick_id, 1_000, null_mut()) };
    assert_eq!(s, hako_status::HAKO_ERROR_INVALID_ARGUMENT);

    // An attached port refuses to drop.
    // SAFETY: a live, attached subscriber.
    let s = unsafe { hako_subscriber_drop(&mut subscriber) };
    assert_eq!(s, hako_status::HAKO_ERROR_MISUSE);
    assert!(!subscriber.is_null());

    ok!(hako_publisher_send_copy(
        publisher,
        c"hello".as_ptr().cast(),
        5,
        null_mut()
    ));
    ok!(hako_notifier_notify(notifier, 2, null_mut()));
    // Both ready; handed out one at a time.
    let mut seen = Vec::new();
    let mut one = [hako_wait_event {
        kind: hako_wait_event_kind::HAKO_EVENT_TICK,
        id: 0,
    }];
    let (mut count, mut how) = (0, hako_wait_outcome::HAKO_WAIT_TIMED_OUT);
    while !(seen.contains(&sub_id) && seen.contains(&lis_id)) {
        ok!(hako_waitset_wait(
            ws,
            1_000_000,
            one.as_mut_ptr(),
            1,
            &mut count,
            &mut how
        ));
        assert_eq!(how, hako_wait_outcome::HAKO_WAIT_EVENTS);
        if count == 1 && one[0].kind == hako_wait_event_kind::HAKO_EVENT_READY {
            seen.push(one[0].id);
        }
        // Take what is there, so a port is not ready again for the same.
        let mut sample = hako_sample {
            data: null(),
            size: 0,
            len: 0,
            publisher_id: 0,
            _private: [0; 8],
        };
        ok!(hako_subscriber_receive(subscriber, 0, &mut sample));
        if !sample.data.is_null() {
            ok!(hako_sample_drop(&mut sample));
        }
        let mut ev = [hako_event::default(); 4];
        let mut k = 0;
        ok!(hako_listener_wait(listener, 0, ev.as_mut_ptr(), 4, &mut k));
    }
    // Then only ticks.
    ok!(hako_waitset_wait(
        ws,
        1_000_000,
        one.as_mut_ptr(),
        1,
        &mut count,
        &mut how
    ));
    assert_eq!(count, 1);
    assert_eq!(one[0].kind, hako_wait_event_kind::HAKO_EVENT_TICK);
    assert_eq!(one[0].id, tick_id);

    ok!(hako_waitset_drop(&mut ws));
    ok!(hako_subscriber_drop(&mut subscriber));
    ok!(hako_listener_drop(&mut listener));
    ok!(hako_notifier_drop(&mut notifier));
    ok!(hako_publisher_drop(&mut publisher));
    ok!(hako_event_service_drop(&mut bell));
    ok!(hako_pubsub_service_drop(&mut topic));
    ok!(hako_node_drop(&mut n));
}
