//! A problem is logged once, not once per frame.

#[path = "integration/common/mod.rs"]
mod common;

use std::io;
use std::sync::{Arc, Mutex};

use bevy::log::{tracing, tracing_subscriber};
use bevy::prelude::*;
use bevy_ik::prelude::*;
use common::*;

/// Collects everything the log writes.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn each_problem_is_warned_once() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let mut app = app();
    let arm = spawn_arm(app.world_mut(), Transform::default());
    let target = app
        .world_mut()
        .spawn(Transform::from_xyz(0.3, 1.3, 0.3))
        .id();
    app.world_mut()
        .spawn(IkLimb::new(arm.upper, arm.lower, arm.hand).with_target(target));
    let other = spawn_arm(app.world_mut(), Transform::from_xyz(2.0, 0.0, 0.0));
    app.world_mut().spawn(
        IkLimb::new("upper", "no_such_bone", "hand")
            .in_hierarchy(other.character)
            .with_target(target),
    );
    // A character whose scene has not spawned yet: nothing named under it, so a bone not
    // found is waiting, not a problem: no warning (the status still says it).
    let loading = app
        .world_mut()
        .spawn((
            Transform::default(),
            IkLimb::new("pending_upper", "pending_lower", "pending_hand").with_target(target),
        ))
        .id();
    app.update();
    app.world_mut()
        .get_mut::<Transform>(target)
        .unwrap()
        .translation
        .x = f32::NAN;
    for _ in 0..10 {
        app.update();
    }
    let log = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let count = |needle: &str| log.matches(needle).count();
    assert_eq!(count("non-finite transform"), 1, "{log}");
    assert_eq!(count("no bone named `no_such_bone`"), 1, "{log}");
    assert_eq!(count("no bone named `pending_upper`"), 0, "{log}");
    let status = app.world().get::<IkStatus>(loading).unwrap();
    assert_eq!(
        status.last_error,
        Some(IkError::MissingBone("pending_upper".into()))
    );
    // The scene spawns, without the bone: now it is a problem, warned once.
    app.world_mut().spawn((
        Name::new("some_other_bone"),
        Transform::default(),
        ChildOf(loading),
    ));
    for _ in 0..3 {
        app.update();
    }
    let log = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert_eq!(
        log.matches("no bone named `pending_upper`").count(),
        1,
        "{log}"
    );
}
