//! The goal motion of the gameplay scenarios in plain vectors: used by `gameplay.rs` (ik-core's
//! `gameplay` tests and bench) and by `bevy_ik`'s crowd bench (`IK_GAMEPLAY`), so that both
//! measure the same goals. Directions are the body frame's (`left`, `up`, `forward`); `scale`
//! is model units per "human metre". The including module provides `Quat` and `Vec3` (glam's,
//! through ik-core or Bevy).

use super::{Quat, Vec3};

/// Smooth pseudo-noise in [-1, 1]: a sum of three sines with seed-dependent phases.
#[must_use]
pub fn noise(t: f32, seed: u32) -> f32 {
    let s = seed as f32 * 1.618_034;
    ((t * 0.71 + s).sin() * 0.5
        + (t * 1.37 + 2.0 * s).sin() * 0.3
        + (t * 2.13 + 3.0 * s).sin() * 0.2)
        .clamp(-1.0, 1.0)
}

/// Foot `k` (0 left, 1 right) on uneven ground at time `t`: how far its goal rises along `up`
/// (up to ±12 cm) and the slope (up to 20°) to turn its goal rotation by.
#[must_use]
pub fn uneven_foot(
    t: f32,
    seed: u32,
    k: u32,
    left: Vec3,
    forward: Vec3,
    scale: f32,
) -> (f32, Quat) {
    let lift = 0.12 * scale * noise(t * 1.3, seed * 7 + k);
    let slope = 20f32.to_radians() * noise(t * 0.9, seed * 11 + k + 3);
    let dir = 0.7 * t + seed as f32 + k as f32;
    let axis = (left * dir.cos() + forward * dir.sin()).normalize();
    (lift, Quat::from_axis_angle(axis, slope))
}

/// Hand `k` (0 left, 1 right) reaching at time `t`: the goal's offset from the upper arm's
/// joint, 30–125 % of the arm's length `arm`, up to 46° to the side and ±29° up and down of
/// forward.
#[must_use]
pub fn reach_offset(
    t: f32,
    seed: u32,
    k: u32,
    (left, up, forward): (Vec3, Vec3, Vec3),
    arm: f32,
) -> Vec3 {
    let side = if k == 0 { left } else { -left };
    let a = 0.8 * noise(t * 0.6, seed * 13 + k);
    let b = 0.5 * noise(t * 0.5, seed * 17 + k);
    let dir = (forward * a.cos() * b.cos() + side * a.sin().abs() + up * b.sin()).normalize();
    let r = 0.775 + 0.475 * noise(t * 0.8, seed * 19 + k);
    dir * arm * r
}

/// The look-at target's offset from the head at time `t`: 2 human metres away, swung up to
/// 150° to either side and ±30° up and down.
#[must_use]
pub fn look_offset(t: f32, seed: u32, (left, up, forward): (Vec3, Vec3, Vec3), scale: f32) -> Vec3 {
    let yaw = 150f32.to_radians() * noise(t * 0.35, seed * 23);
    let pitch = 30f32.to_radians() * noise(t * 0.5, seed * 29);
    Quat::from_axis_angle(up, yaw) * Quat::from_axis_angle(left, pitch) * forward * 2.0 * scale
}
