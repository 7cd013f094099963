//! `--screenshot PATH`: runs the scripted motion on any character, waits until the character is
//! actually drawn (pipelines compile asynchronously, so the pixels of captured frames are
//! checked: with the ground hidden, enough of the character's projected bounds must differ from
//! the clear colour), shows the ground, selects a handle through the mouse-picking code, then
//! writes the PNG itself and reports success only once the file is on disk.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bevy::prelude::*;
use bevy::render::render_resource::TextureFormat;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::PrimaryWindow;
use bevy_ik::prelude::*;
use transform_gizmo_bevy::GizmoTarget;

use crate::camera::Orbit;
use crate::character::{BodyFrame, Character, CharacterAsset, PropsShown};
use crate::handles::{HandleQuery, Role, pick_handle};
use crate::panel::PANEL_WIDTH;
use crate::readouts::Readouts;
use crate::settings::DemoSettings;
use crate::solver::{SolverSetup, SolverUi, is_solving};

/// Background colour (sRGB bytes, also used to tell drawn pixels from cleared ones).
pub const CLEAR: [u8; 3] = [38, 41, 48];
/// Most frames `--screenshot` runs.
const MAX_FRAMES: u32 = 4000;
/// Wall-clock limit of `--screenshot`, in seconds.
const MAX_SECONDS: f32 = 720.0;
/// Share of the character's projected bounds that must be drawn (a silhouette fills 15–40 %).
const MIN_CHARACTER_FILL: f32 = 0.05;
/// Share of the view outside the character's bounds that must be drawn once the ground shows.
const MIN_GROUND_FILL: f32 = 0.02;
/// Frames a rig whose required roles cannot be mapped is given before giving up.
const MAPPING_PATIENCE: u32 = 60;
/// Frames of solving in the first mode before `--switch-from` switches.
pub const SWITCH_AFTER: u32 = 15;
/// Frames of solving in the new mode before the capture sequence starts (bounded tracking
/// meets the targets carried over in 3–5).
const AFTER_SWITCH: u32 = 15;
/// Frames after a step of the capture sequence (the ground shown, a handle selected) before
/// the next capture checks it. What is new to draw (the ground's and the gizmo's pipelines)
/// compiles asynchronously, so a capture that does not see it yet is simply retried
/// [`CAPTURE_EVERY`] frames later; the wait only spares captures that cannot succeed.
const SETTLE_FRAMES: u32 = 5;
/// Frames between captures while waiting (each capture is read back from the GPU).
const CAPTURE_EVERY: u32 = 5;

/// `F12` saves a screenshot of the window (`bevy_ik_demo_N.png` in the working folder),
/// `Ctrl+Q` quits (printing the run summary, like closing the window).
pub struct KeysPlugin;

impl Plugin for KeysPlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(Update, screenshot_and_quit_keys);
    }
}

fn screenshot_and_quit_keys(
    keys: Res<ButtonInput<KeyCode>>,
    mut commands: Commands,
    mut exit: MessageWriter<AppExit>,
    mut taken: Local<u32>,
) {
    if keys.just_pressed(KeyCode::F12) {
        *taken += 1;
        let path = PathBuf::from(format!("bevy_ik_demo_{}.png", *taken));
        commands.spawn(Screenshot::primary_window()).observe(
            move |captured: On<ScreenshotCaptured>| match save_png(&captured.image, &path) {
                Ok(()) => info!("screenshot saved to {}", path.display()),
                Err(e) => warn!("{e}"),
            },
        );
    }
    let ctrl = keys.any_pressed([KeyCode::ControlLeft, KeyCode::ControlRight]);
    if ctrl && keys.just_pressed(KeyCode::KeyQ) {
        exit.write(AppExit::Success);
    }
}

/// The result `main` reports: `Ok(message)` once the file is written, `Err(message)` on failure.
pub type Outcome = Arc<Mutex<Option<Result<String, String>>>>;

/// Drives `--screenshot`.
pub struct ScreenshotPlugin {
    /// Where to write the PNG.
    pub path: PathBuf,
    /// Least number of frames after set-up before the screenshot.
    pub frames: u32,
    /// Switch the character to this mode in place, [`SWITCH_AFTER`] frames after it first
    /// solved (`--switch-from`): the rest of the run, and its summary, are the new mode's.
    pub switch_to: Option<SolverUi>,
    /// Filled when done.
    pub outcome: Outcome,
}

impl Plugin for ScreenshotPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(ScreenshotState {
            path: self.path.clone(),
            min_frames: self.frames,
            switch_to: self.switch_to,
            outcome: self.outcome.clone(),
            ..default()
        })
        .add_systems(Update, drive_screenshot);
    }
}

/// Progress of `--screenshot`.
#[derive(Resource, Default)]
struct ScreenshotState {
    path: PathBuf,
    min_frames: u32,
    /// Frames since the character's solver first wrote a pose.
    frames_ready: u32,
    /// Frames since the program started.
    frames: u32,
    /// Consecutive frames with required humanoid roles unmapped.
    unmapped_frames: u32,
    /// A capture is in flight.
    pending: bool,
    /// The mode to switch to (`--switch-from`), until switched.
    switch_to: Option<SolverUi>,
    /// The mode was switched at this `frames_ready`.
    switched_at: Option<u32>,
    /// The character was seen drawn (and the ground shown) at this `frames_ready`.
    seen_at: Option<u32>,
    /// A handle was selected at this `frames_ready`.
    selected_at: Option<u32>,
    outcome: Outcome,
    /// The last capture, filled by its observer.
    capture: Arc<Mutex<Option<Capture>>>,
    /// What the last capture's probe counted (logged with the progress, for a run that waits).
    last_probe: Option<Probe>,
    started: Option<Instant>,
}

/// What the observer of a capture found.
#[derive(Clone, Debug)]
struct Capture {
    probe: Probe,
    /// `Some` when this capture was to be saved: whether writing the file worked.
    saved: Option<Result<(), String>>,
}

/// Pixel counts of a captured frame's 3D view.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Probe {
    /// Pixels inside the character's projected bounds that are neither clear nor a handle or
    /// gizmo colour.
    pub character: u32,
    /// Pixels inside those bounds.
    pub character_area: u32,
    /// Drawn pixels outside those bounds (the ground, once shown).
    pub outside: u32,
    /// Pixels outside those bounds.
    pub outside_area: u32,
    /// Handle-yellow pixels (the hands' handles).
    pub handles: u32,
    /// Gizmo-green pixels.
    pub gizmo: u32,
    /// Pixels of the 3D view that differ from the clear colour.
    pub drawn: u32,
    /// Pixels of the 3D view.
    pub total: u32,
}

impl Probe {
    /// The character is drawn.
    pub fn character_seen(&self) -> bool {
        self.character_area > 0
            && self.character as f32 >= MIN_CHARACTER_FILL * self.character_area as f32
    }

    /// The ground is drawn.
    pub fn ground_seen(&self) -> bool {
        self.outside_area > 0 && self.outside as f32 >= MIN_GROUND_FILL * self.outside_area as f32
    }
}

fn drive_screenshot(
    mut state: ResMut<ScreenshotState>,
    humanoids: Query<
        (
            Option<&IkHumanoidTargets>,
            &IkStatus,
            Option<&IkRig>,
            &SolverSetup,
        ),
        With<Character>,
    >,
    statuses: Query<&IkStatus>,
    vr_stages: Query<&IkStatus, With<IkVrBody>>,
    handles: HandleQuery,
    camera: Single<(&Camera, &GlobalTransform), With<Orbit>>,
    window: Single<&Window, With<PrimaryWindow>>,
    asset: Option<Res<CharacterAsset>>,
    frame: Option<Res<BodyFrame>>,
    readouts: Res<Readouts>,
    mut settings: ResMut<DemoSettings>,
    mut props: ResMut<PropsShown>,
    mut commands: Commands,
    mut exit: MessageWriter<AppExit>,
) {
    let state = &mut *state;
    state.frames += 1;
    let started = *state.started.get_or_insert_with(Instant::now);
    if let Ok(outcome) = state.outcome.lock()
        && let Some(result) = outcome.as_ref()
    {
        exit.write(if result.is_ok() {
            AppExit::Success
        } else {
            AppExit::error()
        });
        return;
    }
    let missing = readouts
        .mapping
        .as_ref()
        .filter(|m| !m.missing_required.is_empty());
    state.unmapped_frames = if missing.is_some() {
        state.unmapped_frames + 1
    } else {
        0
    };
    let failure = if let Some(e) = asset.as_ref().and_then(|a| a.error.clone()) {
        Some(e)
    } else if let Some(m) = missing.filter(|_| state.unmapped_frames > MAPPING_PATIENCE) {
        Some(format!(
            "the humanoid cannot be set up: required roles not found ({})",
            m.missing_required.join(", ")
        ))
    } else if state.frames > MAX_FRAMES || started.elapsed().as_secs_f32() > MAX_SECONDS {
        Some(format!(
            "gave up after {} frames ({:.0} s): the character was not seen drawn",
            state.frames,
            started.elapsed().as_secs_f32()
        ))
    } else {
        None
    };
    if let Some(message) = failure {
        if let Ok(mut o) = state.outcome.lock() {
            *o = Some(Err(message));
        }
        exit.write(AppExit::error());
        return;
    }
    if state.frames.is_multiple_of(50) {
        info!(
            "screenshot: frame {}, {:.1} s, {} frames since the character was set up; last probe {:?}",
            state.frames,
            started.elapsed().as_secs_f32(),
            state.frames_ready,
            state.last_probe
        );
    }
    // In VR mode the VR body drives the character (the full-body stage is faded out).
    let ready = humanoids.single().is_ok_and(|(t, status, rig, setup)| {
        t.is_some_and(|t| is_solving(setup, t, status, rig, &statuses))
    }) || vr_stages.iter().any(|s| s.solved);
    let Some(frame) = frame.filter(|_| ready) else {
        return;
    };
    state.frames_ready += 1;
    if let Some(mode) = state.switch_to
        && state.frames_ready >= SWITCH_AFTER
    {
        info!(
            "screenshot: switching {} -> {} in place",
            settings.solver.name(),
            mode.name()
        );
        settings.solver = mode;
        state.switch_to = None;
        state.switched_at = Some(state.frames_ready);
        return;
    }
    if state.switch_to.is_some() {
        return;
    }
    let (camera, camera_transform) = *camera;
    let capture = state.capture.lock().ok().and_then(|mut c| c.take());
    if let Some(capture) = capture {
        state.pending = false;
        let probe = capture.probe;
        state.last_probe = Some(probe);
        match (state.seen_at, state.selected_at) {
            (None, _) if probe.character_seen() && probe.handles > 30 => {
                // The character alone is drawn: show the ground and the step.
                props.0 = true;
                state.seen_at = Some(state.frames_ready);
            }
            (Some(_), None) if probe.ground_seen() => {
                // "Click" the left hand's handle through the same picking as the mouse (a
                // check of the viewport maths), so its gizmo shows; give that time to draw.
                let wanted = handles
                    .iter()
                    .filter(|(.., h, v)| !h.pole && **v != Visibility::Hidden)
                    .min_by_key(|(.., h, _)| h.role != Role::LeftHand)
                    .map(|(e, t, ..)| (e, t.translation()));
                let picked = wanted.and_then(|(_, at)| {
                    let cursor = camera.world_to_viewport(camera_transform, at).ok()?;
                    pick_handle(camera, camera_transform, cursor, &handles)
                });
                match (wanted, picked) {
                    (Some((e, _)), Some(p)) if p == e => {
                        commands.entity(e).insert(GizmoTarget::default());
                        state.selected_at = Some(state.frames_ready);
                    }
                    _ => {
                        if let Ok(mut o) = state.outcome.lock() {
                            *o = Some(Err(format!(
                                "picking a hand's handle at its projected position gave {picked:?}, expected {:?}",
                                wanted.map(|w| w.0)
                            )));
                        }
                        return;
                    }
                }
            }
            (Some(_), Some(_)) => match capture.saved {
                Some(Ok(())) => {
                    let seconds = started.elapsed().as_secs_f32();
                    let written = std::fs::metadata(&state.path).map_or(0, |m| m.len());
                    let result = if written > 0 {
                        Ok(format!(
                            "screenshot saved to {} ({written} bytes) after {} frames ({:.1} s, {:.1} ms/frame average); {} of {} view pixels drawn",
                            state.path.display(),
                            state.frames,
                            seconds,
                            seconds * 1000.0 / state.frames as f32,
                            probe.drawn,
                            probe.total
                        ))
                    } else {
                        Err(format!(
                            "{} is missing or empty after saving",
                            state.path.display()
                        ))
                    };
                    if let Ok(mut o) = state.outcome.lock() {
                        *o = Some(result);
                    }
                    return;
                }
                Some(Err(e)) => {
                    if let Ok(mut o) = state.outcome.lock() {
                        *o = Some(Err(e));
                    }
                    return;
                }
                None => {}
            },
            _ => {}
        }
    }
    let settle = state
        .selected_at
        .or(state.seen_at)
        .map_or(0, |s| s + SETTLE_FRAMES)
        .max(state.switched_at.map_or(0, |s| s + AFTER_SWITCH));
    if state.pending
        || state.frames_ready < state.min_frames.max(settle)
        || !state.frames_ready.is_multiple_of(CAPTURE_EVERY)
    {
        return;
    }
    state.pending = true;
    let scale = window.scale_factor();
    let left = (PANEL_WIDTH * scale) as u32;
    // The character's bounds on screen, in physical pixels.
    let corners: Vec<Vec2> = frame
        .corners()
        .iter()
        .filter_map(|&c| camera.world_to_viewport(camera_transform, c).ok())
        .map(|p| p * scale)
        .collect();
    let bounds = (corners.len() == 8).then(|| {
        let min = corners.iter().fold(Vec2::MAX, |a, &p| a.min(p));
        let max = corners.iter().fold(Vec2::MIN, |a, &p| a.max(p));
        URect::new(
            min.x.max(0.0) as u32,
            min.y.max(0.0) as u32,
            max.x.max(0.0) as u32,
            max.y.max(0.0) as u32,
        )
    });
    let final_candidate = state.selected_at.is_some();
    let slot = state.capture.clone();
    let path = state.path.clone();
    commands.spawn(Screenshot::primary_window()).observe(
        move |captured: On<ScreenshotCaptured>| {
            let probe = probe_image(&captured.image, left, bounds);
            let accept = final_candidate
                && probe.character_seen()
                && probe.ground_seen()
                && probe.handles > 30
                && probe.gizmo > 30;
            let saved = accept.then(|| save_png(&captured.image, &path));
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(Capture { probe, saved });
            }
        },
    );
}

/// Writes an image as an RGB PNG (the alpha channel of a window capture is not coverage).
fn save_png(image: &Image, path: &Path) -> Result<(), String> {
    let dynamic = image
        .clone()
        .try_into_dynamic()
        .map_err(|e| format!("cannot convert the capture: {e}"))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    dynamic
        .to_rgb8()
        .save(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Counts telling pixels in the 3D view (right of `left`) of a captured frame; `bounds` is the
/// character's projected bounds (physical pixels).
pub fn probe_image(image: &Image, left: u32, bounds: Option<URect>) -> Probe {
    let mut probe = Probe::default();
    let Some(data) = image.data.as_ref() else {
        return probe;
    };
    let (w, h) = (image.width(), image.height());
    let bgra = matches!(
        image.texture_descriptor.format,
        TextureFormat::Bgra8Unorm | TextureFormat::Bgra8UnormSrgb
    );
    let clear = CLEAR.map(i32::from);
    for y in 0..h {
        for x in left.min(w)..w {
            let i = ((y * w + x) * 4) as usize;
            let Some(px) = data.get(i..i + 4) else {
                continue;
            };
            let (r, g, b) = if bgra {
                (i32::from(px[2]), i32::from(px[1]), i32::from(px[0]))
            } else {
                (i32::from(px[0]), i32::from(px[1]), i32::from(px[2]))
            };
            probe.total += 1;
            let drawn = (r - clear[0]).abs() + (g - clear[1]).abs() + (b - clear[2]).abs() > 12;
            let handle = r > 180 && g > 100 && b < 100;
            let gizmo = g > 170 && r < 110 && b < 190 && g > b + 40;
            probe.drawn += u32::from(drawn);
            probe.handles += u32::from(handle);
            probe.gizmo += u32::from(gizmo);
            let inside = bounds.is_some_and(|b| {
                (b.min.x..b.max.x.max(b.min.x + 1)).contains(&x)
                    && (b.min.y..b.max.y.max(b.min.y + 1)).contains(&y)
            });
            if inside {
                probe.character_area += 1;
                probe.character += u32::from(drawn && !handle && !gizmo);
            } else {
                probe.outside_area += 1;
                probe.outside += u32::from(drawn);
            }
        }
    }
    probe
}

#[cfg(test)]
mod tests {
    use super::*;
    use bevy::asset::RenderAssetUsages;
    use bevy::render::render_resource::{Extent3d, TextureDimension};

    #[test]
    fn probe_counts_character_handle_gizmo_and_ground_pixels_right_of_the_panel() {
        // Any colour counts as the character: no assumption about its materials.
        let skin = [200, 200, 190, 255];
        let handle = [250, 190, 40, 255];
        let gizmo = [20, 220, 110, 255];
        let ground = [90, 92, 98, 255];
        let clear = [CLEAR[0], CLEAR[1], CLEAR[2], 255];
        // 4 x 3 pixels; column 0 stands for the panel and is ignored; the character's bounds
        // are columns 1-2 of rows 0-1.
        let pixels = [
            skin, skin, handle, clear, //
            skin, gizmo, clear, ground, //
            ground, ground, clear, clear,
        ];
        let image = Image::new(
            Extent3d {
                width: 4,
                height: 3,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            pixels.concat(),
            TextureFormat::Rgba8UnormSrgb,
            RenderAssetUsages::default(),
        );
        let p = probe_image(&image, 1, Some(URect::new(1, 0, 3, 2)));
        assert_eq!(p.total, 9);
        assert_eq!((p.character, p.character_area), (1, 4));
        assert_eq!((p.outside, p.outside_area), (2, 5));
        assert_eq!(p.handles, 1);
        assert_eq!(p.gizmo, 1);
        assert_eq!(p.drawn, 5);
        assert!(p.character_seen() && p.ground_seen());
        let blank = probe_image(&image, 4, Some(URect::new(1, 0, 3, 2)));
        assert_eq!(blank.total, 0);
        assert!(!blank.character_seen() && !blank.ground_seen());
        let unprojected = probe_image(&image, 1, None);
        assert_eq!(unprojected.character_area, 0);
        assert!(!unprojected.character_seen());
    }

    #[test]
    fn saving_reports_failure_instead_of_claiming_success() {
        let image = Image::new_fill(
            Extent3d {
                width: 2,
                height: 2,
                depth_or_array_layers: 1,
            },
            TextureDimension::D2,
            &[10, 20, 30, 255],
            TextureFormat::Rgba8UnormSrgb,
            RenderAssetUsages::default(),
        );
        let dir = std::env::temp_dir().join(format!("bevy_ik_shot_{}", std::process::id()));
        let path = dir.join("sub").join("shot.png");
        assert_eq!(save_png(&image, &path), Ok(()));
        assert!(std::fs::metadata(&path).is_ok_and(|m| m.len() > 0));
        // A directory where the file should go cannot be written.
        let blocked = dir.join("sub");
        assert!(save_png(&image, &blocked).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
