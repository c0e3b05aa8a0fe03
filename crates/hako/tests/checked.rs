//! Payload types with invalid bit patterns (`bool`, `char`, and structs,
//! arrays, slices and fixed-capacity vectors holding them) cross services,
//! and a sample whose bytes are not a value of its type, written by a
//! process that describes the type at run time (as C and Python do), is an
//! error on receive, never a value; the connection carries on.

use hako::{FixedVec, Payload, ReceiveError, ShmSafe};

mod common;
use common::Root;

#[derive(Debug, Clone, Copy, PartialEq, Default, ShmSafe)]
#[repr(C)]
struct Switch {
    on: bool,
    key: char,
    level: u16,
}

/// A generic struct: its fields are checked at their offsets too.
#[derive(Debug, Clone, Copy, PartialEq, Default, ShmSafe)]
#[repr(C)]
struct Tagged<T> {
    value: T,
    valid: bool,
}

#[test]
fn bools_and_chars_cross_a_service() {
    let root = Root::new("checked-cross");
    let node = root.node();
    let svc = node
        .service_builder(&"test/switch".try_into().unwrap())
        .publish_subscribe::<Switch>()
        .open_or_create()
        .unwrap();
    let publisher = svc.publisher_builder().create().unwrap();
    let subscriber = svc.subscriber_builder().create().unwrap();
    let sent = Switch {
        on: true,
        key: 'é',
        level: 7,
    };
    publisher.send_copy(sent).unwrap();
    assert_eq!(*subscriber.receive().unwrap().unwrap(), sent);
    // Checked: the types holding a bool or a char; never the others.
    const {
        assert!(<Switch as ShmSafe>::CHECKED);
        assert!(<Tagged<u32> as ShmSafe>::CHECKED);
        assert!(!<[u64; 4] as ShmSafe>::CHECKED);
        assert!(!<FixedVec<u16, 4> as ShmSafe>::CHECKED);
    }
}

/// Sends `bytes` as one sample of a service whose type `T` a `[u8]`
/// publisher describes at run time (as a language binding does: elements
/// of `T`'s size, written through the raw pointer), and returns what a `T`
/// subscriber gets for it: the size of the value, or the error.
fn receive_raw<T: Payload + ?Sized>(tag: &str, bytes: &[u8]) -> Result<usize, ReceiveError> {
    let root = Root::new(&format!("checked-{tag}"));
    let node = root.node();
    let name = format!("test/raw/{tag}").as_str().try_into().unwrap();
    let typed = node
        .service_builder(&name)
        .publish_subscribe::<T>()
        .open_or_create()
        .unwrap();
    let subscriber = typed.subscriber_builder().create().unwrap();
    let details = T::details();
    let raw = node
        .service_builder(&name)
        .publish_subscribe::<[u8]>()
        .payload_type(details.clone())
        .open()
        .unwrap();
    let elems = bytes.len() / details.size as usize;
    let publisher = raw
        .publisher_builder()
        .max_slice_len(elems)
        .create()
        .unwrap();
    let send = |b: &[u8]| {
        let mut loan = publisher.loan_slice_uninit(elems).unwrap();
        // SAFETY: the loan holds `elems` elements of `details.size` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(b.as_ptr(), loan.as_mut_ptr(), b.len());
            loan.assume_init().send();
        }
    };
    send(bytes);
    let got = subscriber
        .receive()
        .map(|s| std::mem::size_of_val(&*s.expect("a sample")));
    // The bad sample was dropped; the next one comes through.
    if got.is_err() {
        send(&vec![0; bytes.len()]);
        assert!(
            subscriber.receive().unwrap().is_some(),
            "the connection carries on"
        );
    }
    got
}

fn switch_bytes(on: u8, key: u32) -> Vec<u8> {
    let mut b = vec![0u8; std::mem::size_of::<Switch>()];
    b[0] = on;
    b[4..8].copy_from_slice(&key.to_ne_bytes());
    b
}

#[test]
fn a_bool_that_is_not_0_or_1_is_refused() {
    let size = std::mem::size_of::<Switch>();
    assert_eq!(
        receive_raw::<Switch>("bool-ok", &switch_bytes(1, 'a' as u32)),
        Ok(size)
    );
    let e = receive_raw::<Switch>("bool-bad", &switch_bytes(2, 'a' as u32)).unwrap_err();
    assert!(matches!(e, ReceiveError::InvalidPayload { .. }), "{e}");
    assert!(e.to_string().contains("Switch"), "{e}");
}

#[test]
fn a_char_that_is_no_scalar_value_is_refused() {
    // A surrogate, and a value above U+10FFFF.
    for (tag, key) in [("char-surrogate", 0xD800), ("char-high", 0x11_0000)] {
        let e = receive_raw::<Switch>(tag, &switch_bytes(0, key)).unwrap_err();
        assert!(matches!(e, ReceiveError::InvalidPayload { .. }), "{e}");
    }
}

#[test]
fn every_element_of_slices_arrays_and_fixed_vectors_is_checked() {
    assert_eq!(receive_raw::<[bool]>("slice-ok", &[1, 0, 1]), Ok(3));
    let e = receive_raw::<[bool]>("slice-bad", &[1, 0, 9]).unwrap_err();
    assert!(matches!(e, ReceiveError::InvalidPayload { .. }), "{e}");
    let e = receive_raw::<[bool; 4]>("array-bad", &[0, 0, 0, 3]).unwrap_err();
    assert!(matches!(e, ReceiveError::InvalidPayload { .. }), "{e}");
    // A fixed vector's unused slots are values of the array too.
    let mut v = vec![0u8; std::mem::size_of::<FixedVec<bool, 4>>()];
    v[4 + 3] = 5;
    let e = receive_raw::<FixedVec<bool, 4>>("fixedvec-bad", &v).unwrap_err();
    assert!(matches!(e, ReceiveError::InvalidPayload { .. }), "{e}");
    // A generic struct's bool, after its value.
    let mut t = vec![0u8; std::mem::size_of::<Tagged<u32>>()];
    t[4] = 2;
    let e = receive_raw::<Tagged<u32>>("generic-bad", &t).unwrap_err();
    assert!(matches!(e, ReceiveError::InvalidPayload { .. }), "{e}");
}

#[test]
fn an_invalid_request_or_response_is_corrupted() {
    let root = Root::new("checked-reqres");
    let node = root.node();
    let name = "test/raw/reqres".try_into().unwrap();
    let typed = node
        .service_builder(&name)
        .request_response::<bool, char>()
        .open_or_create()
        .unwrap();
    let server = typed.server_builder().create().unwrap();
    let raw = node
        .service_builder(&name)
        .request_response::<[u8], [u8]>()
        .payload_types(<bool as Payload>::details(), <char as Payload>::details())
        .open()
        .unwrap();
    let client = raw.client_builder().max_slice_len(1).create().unwrap();
    let _pending = client.send_slice_copy(&[7]).unwrap(); // bool: one byte
    let e = server.receive().unwrap_err();
    assert!(
        matches!(e, hako::ReqResReceiveError::Corrupted { .. }),
        "{e}"
    );
    assert!(e.to_string().contains("not a value"), "{e}");
    // A valid request, answered with an invalid char by a raw server.
    drop(server);
    let raw_server = raw.server_builder().max_slice_len(1).create().unwrap();
    let typed_client = typed.client_builder().create().unwrap();
    let pending = typed_client.send_copy(true).unwrap();
    let request = raw_server.blocking_receive().unwrap();
    assert_eq!(&*request, &[1]);
    // One element of the response type: a char's four bytes.
    let mut response = request.loan_slice_uninit(1).unwrap();
    // SAFETY: the loan holds one element of four bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(0xD800u32.to_ne_bytes().as_ptr(), response.as_mut_ptr(), 4);
        request.send_last(response.assume_init()).unwrap();
    }
    let e = pending.blocking_receive().unwrap_err();
    assert!(
        matches!(e, hako::ReqResReceiveError::Corrupted { .. }),
        "{e}"
    );
}
