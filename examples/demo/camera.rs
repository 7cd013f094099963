//! The cameras: the 3D view right of the panel (orbit with the right mouse button, pan with the
//! middle one, zoom with the wheel), framed to the character's bounds whenever a new character
//! is measured, and egui's camera over the whole window.

use bevy::camera::visibility::RenderLayers;
use bevy::camera::{CameraOutputMode, Viewport};
use bevy::input::mouse::{AccumulatedMouseScroll, MouseScrollUnit};
use bevy::prelude::*;
use bevy::render::render_resource::BlendState;
use bevy::window::PrimaryWindow;
use bevy_egui::{EguiContexts, EguiGlobalSettings, PrimaryEguiContext};
use transform_gizmo_bevy::GizmoCamera;

use crate::character::{BodyFrame, CharacterAsset};
use crate::panel::PANEL_WIDTH;

/// The cameras and their controls.
pub struct CameraPlugin {
    /// Initial yaw (degrees, 0 = in front of the character).
    pub yaw: Option<f32>,
    /// Anti-aliasing of the 3D view (`--msaa`).
    pub msaa: Msaa,
}

impl Plugin for CameraPlugin {
    fn build(&self, app: &mut App) {
        let yaw = self.yaw.unwrap_or(-45.0).to_radians();
        let msaa = self.msaa;
        app.add_systems(
            Startup,
            move |commands: Commands, egui: ResMut<EguiGlobalSettings>| {
                spawn_cameras(commands, egui, yaw, msaa);
            },
        )
        .add_systems(
            Update,
            (frame_character, orbit_camera, fit_viewport).chain(),
        );
    }
}

/// The 3D camera and its orbit.
#[derive(Component)]
pub struct Orbit {
    /// The point orbited.
    pub focus: Vec3,
    /// Radians about +Y, 0 = in front of a character facing +Z.
    pub yaw: f32,
    /// Radians, negative = looking down.
    pub pitch: f32,
    /// From the focus.
    pub distance: f32,
    /// Zoom limits (from the character's size).
    pub range: (f32, f32),
}

impl Orbit {
    /// The camera transform of this orbit.
    pub fn transform(&self) -> Transform {
        let rotation = Quat::from_euler(EulerRot::YXZ, self.yaw, self.pitch, 0.0);
        Transform::from_translation(self.focus + rotation * Vec3::Z * self.distance)
            .looking_at(self.focus, Vec3::Y)
    }

    /// Focus and distance that fit a box of `size` centred on `center` into a view of the given
    /// vertical field of view and aspect ratio, from any yaw, with some margin.
    pub fn fit(&mut self, center: Vec3, size: Vec3, fov: f32, aspect: f32) {
        let half_height = size.y * 0.5;
        // The widest horizontal extent seen from any yaw.
        let half_width = Vec2::new(size.x, size.z).length() * 0.5;
        let tan = (fov * 0.5).tan().max(1e-3);
        let fit = (half_height / tan).max(half_width / (tan * aspect.max(0.1)));
        let extent = size.length().max(1e-3);
        self.focus = center;
        self.distance = (fit * 1.35 + half_width).max(extent * 0.2);
        self.range = (extent * 0.15, extent * 8.0);
    }
}

/// The 3D camera's viewport rectangle in logical window coordinates.
pub fn viewport_rect(camera: &Camera) -> Option<Rect> {
    camera.logical_viewport_rect()
}

fn spawn_cameras(
    mut commands: Commands,
    mut egui_settings: ResMut<EguiGlobalSettings>,
    yaw: f32,
    msaa: Msaa,
) {
    // The 3D camera renders into the part of the window right of the panel; egui gets its own
    // camera over the whole window.
    egui_settings.auto_create_primary_context = false;
    let orbit = Orbit {
        focus: Vec3::new(0.0, 0.95, 0.0),
        yaw,
        pitch: -0.12,
        distance: 3.0,
        range: (0.6, 15.0),
    };
    commands.spawn((
        Camera3d::default(),
        orbit.transform(),
        orbit,
        GizmoCamera,
        msaa,
    ));
    commands.spawn((
        PrimaryEguiContext,
        Camera2d,
        RenderLayers::none(),
        Camera {
            order: 1,
            output_mode: CameraOutputMode::Write {
                blend_state: Some(BlendState::ALPHA_BLENDING),
                clear_color: ClearColorConfig::None,
            },
            clear_color: ClearColorConfig::Custom(Color::NONE),
            ..default()
        },
    ));
}

/// Frames a newly opened character (not the same one after a mode switch, so the view the
/// user chose stays), seen from the same side of its face whichever way it faces
/// (VRM 0.x avatars face −Z, most other files +Z): the yaw turns by the change in facing.
pub(crate) fn frame_character(
    frame: Option<Res<BodyFrame>>,
    asset: Option<Res<CharacterAsset>>,
    mut camera: Single<(&mut Orbit, &mut Transform, &Camera, &Projection)>,
    mut framed: Local<Option<String>>,
    mut facing: Local<f32>,
) {
    let (Some(frame), Some(asset)) = (frame, asset) else {
        return;
    };
    let name = asset.path.display();
    if !frame.is_changed() || framed.as_deref() == Some(name.as_str()) {
        return;
    }
    let (orbit, transform, cam, projection) = &mut *camera;
    let (fov, near) = match projection {
        Projection::Perspective(p) => (p.fov, p.near),
        _ => (core::f32::consts::FRAC_PI_4, 0.1),
    };
    let aspect = cam
        .logical_viewport_size()
        .map_or(16.0 / 9.0, |s| s.x / s.y.max(1.0));
    orbit.fit(frame.center(), frame.max - frame.min, fov, aspect);
    // Yaw 0 looks from +Z; a character facing `forward` is seen from the front at its heading.
    let heading = frame.forward.x.atan2(frame.forward.z);
    if heading.is_finite() {
        orbit.yaw += heading - *facing;
        *facing = heading;
    }
    if orbit.distance < near * 4.0 {
        warn!("the character is very small ({:.3} m)", frame.height());
    }
    **transform = orbit.transform();
    *framed = Some(name);
}

/// Right drag orbits, middle drag pans, the wheel zooms.
fn orbit_camera(
    mouse: Res<ButtonInput<MouseButton>>,
    scroll: Res<AccumulatedMouseScroll>,
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Single<(&mut Orbit, &mut Transform, &Camera)>,
    mut contexts: EguiContexts,
    mut last_cursor: Local<Option<Vec2>>,
) {
    // Motion from the cursor position rather than raw device motion, which some X servers,
    // remote desktops and VMs do not deliver.
    let cursor = window.cursor_position();
    let delta = match (cursor, *last_cursor) {
        (Some(now), Some(before)) => now - before,
        _ => Vec2::ZERO,
    };
    *last_cursor = cursor;
    if contexts
        .ctx_mut()
        .is_ok_and(|ctx| ctx.is_pointer_over_egui())
    {
        return;
    }
    let (orbit, transform, cam) = &mut *camera;
    let inside = cursor.is_some_and(|c| viewport_rect(cam).is_some_and(|r| r.contains(c)));
    let mut changed = false;
    if mouse.pressed(MouseButton::Right) && delta != Vec2::ZERO {
        orbit.yaw -= delta.x * 0.006;
        orbit.pitch = (orbit.pitch - delta.y * 0.006).clamp(-1.45, 1.45);
        changed = true;
    }
    if mouse.pressed(MouseButton::Middle) && delta != Vec2::ZERO {
        let pan = orbit.distance * 0.0016;
        let right = transform.rotation * Vec3::X;
        let up = transform.rotation * Vec3::Y;
        orbit.focus += (-right * delta.x + up * delta.y) * pan;
        changed = true;
    }
    let lines = match scroll.unit {
        MouseScrollUnit::Line => scroll.delta.y,
        MouseScrollUnit::Pixel => scroll.delta.y / 40.0,
    };
    if inside && lines != 0.0 {
        let (near, far) = orbit.range;
        orbit.distance = (orbit.distance * (1.0 - lines * 0.1).max(0.2)).clamp(near, far);
        changed = true;
    }
    if changed {
        **transform = orbit.transform();
    }
}

/// Keeps the 3D camera's viewport right of the panel.
fn fit_viewport(
    window: Single<&Window, With<PrimaryWindow>>,
    mut camera: Single<&mut Camera, With<Orbit>>,
) {
    let scale = window.scale_factor();
    let left = ((PANEL_WIDTH * scale) as u32).min(window.physical_width().saturating_sub(1));
    let size = UVec2::new(
        window.physical_width().saturating_sub(left).max(1),
        window.physical_height().max(1),
    );
    let viewport = Viewport {
        physical_position: UVec2::new(left, 0),
        physical_size: size,
        ..default()
    };
    if camera.viewport.as_ref().is_none_or(|v| {
        v.physical_position != viewport.physical_position || v.physical_size != size
    }) {
        camera.viewport = Some(viewport);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fitting_scales_with_the_character_and_keeps_it_in_view() {
        let fov = core::f32::consts::FRAC_PI_4;
        let mut small = Orbit {
            focus: Vec3::ZERO,
            yaw: 0.0,
            pitch: 0.0,
            distance: 1.0,
            range: (0.0, 0.0),
        };
        small.fit(Vec3::Y * 0.8, Vec3::new(0.6, 1.6, 0.3), fov, 1.3);
        let mut big = Orbit { ..small };
        big.fit(Vec3::Y * 8.0, Vec3::new(6.0, 16.0, 3.0), fov, 1.3);
        assert!((big.distance / small.distance - 10.0).abs() < 1e-3);
        assert_eq!(big.focus, Vec3::Y * 8.0);
        // The whole height is inside the vertical field of view.
        assert!(0.8 / small.distance < (fov * 0.5).tan());
        assert!(small.range.0 < small.distance && small.distance < small.range.1);
    }
}
