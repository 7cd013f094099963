//! The `bevy_ik` demo: a glTF character whose hands, feet, pelvis and head follow targets you
//! drag with a gizmo, over its idle animation, with an egui panel to tune the solver.
//!
//! ```text
//! cargo run --release --features demo --example demo [-- CHARACTER.glb|.gltf|.vrm]
//! cargo run --features demo --example demo -- --screenshot shot.png [--frames 60]
//!     [--character FILE.glb|FILE.gltf|FILE.vrm] [--solver full-body|rig|limbs]
//!     [--settings saved.ron] [--yaw DEGREES] [--terrain] [--walk] [--vr] [--creature]
//!     [--msaa 1|2|4|8] [--window WIDTHxHEIGHT]
//! ```
//!
//! * Any humanoid glTF or VRM character opens: a path on the command line (a file on disk, or
//!   a name in the asset folder), a `.glb`/`.gltf`/`.vrm` dropped on the window, or the
//!   panel's picker of the characters in `assets/` (the bundled one, made by
//!   `examples/make_character.rs`, its VRM 0.x variant made by `examples/make_vrm.rs`, and four
//!   CC0 characters made by others: see `assets/LICENSE.md`). [`IkHumanoid`] recognises the
//!   bones by a VRM file's own humanoid table, else by name; the panel shows what it mapped
//!   and what is missing. The camera, handles and
//!   scripted motion are sized to the character's measured bounds.
//! * Click a coloured handle to select it (its outline is drawn over the character, so a
//!   handle inside a bulky mesh is still found); `T` translate, `R` rotate, `L` local/global axes,
//!   `Esc` deselect. Right mouse drag orbits, middle drag pans, the wheel zooms. `F12` saves a
//!   screenshot (`bevy_ik_demo_N.png`), `Ctrl+Q` quits.
//! * Three solvers: the humanoid's hybrid full-body solver (default), a general Jacobian
//!   [`IkRig`] the demo builds on the mapped bones (per-goal weights, priority levels, blends),
//!   or four analytic [`IkLimb`]s with elbow and knee poles. Switching changes the character in
//!   place: the targets the modes share keep where they were dragged; the stages the user
//!   added stay.
//! * `--screenshot PATH` runs headless-friendly: scripted target motion, waits until the
//!   character is loaded and actually drawn (pipelines compile asynchronously; the pixels of
//!   captured frames are checked), selects a handle through the mouse-picking code, writes the
//!   PNG and exits 0 (1 on failure). `--frames N` sets the least number of frames after set-up.
//! * `--window WIDTHxHEIGHT` sets the window's size in logical pixels (default 1280x720, at
//!   least 640x360). Beside a 3D view narrower than 900 pixels the terrain and IK-stack
//!   windows start collapsed to their title bars.
//! * At exit the demo prints one line `IK_SUMMARY {json}`: the character file, humanoid roles
//!   mapped and missing, goals met, each goal's last and largest residual, the mean solve time.
//!
//! One small plugin per concern, like Bevy's `scene_viewer`: [`character`] (files, scene,
//! bounds), [`solver`] (everything that depends on the solver mode), [`handles`] (targets,
//! gizmo, scripted motion, overlay), [`camera`], [`panel`], [`settings`] (RON), [`readouts`]
//! (residuals, plots, summary), [`stack`] (the character's IK stack window, analytic arms after
//! the solver), [`screenshot`], [`grounding`] (the terrain mode: feet on a stair and a ramp,
//! `--terrain`; `--walk`: the walk clip across a scrolling course), [`behaviours`] (look-at, aim, twist stages, two-handed grip) and [`vr`] (`--vr`:
//! the head and hand handles are the trackers of a VR body) and [`creature`] (`--creature`: the
//! procedural quadruped of `examples/creature.rs` walking beside the character on the terrain).

mod behaviours;
/// The creature's body meshes (shared with `examples/creature.rs`).
#[path = "../creature/body.rs"]
mod body;
mod camera;
mod character;
mod creature;
mod grounding;
mod handles;
mod panel;
mod readouts;
/// The creature's skeleton and stages (shared with `examples/creature.rs` and its test).
#[path = "../creature/rig.rs"]
mod rig;
mod screenshot;
mod settings;
mod solver;
mod stack;
mod vr;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use bevy::asset::UnapprovedPathMode;
use bevy::prelude::*;
use bevy::window::WindowResolution;
use bevy_egui::EguiPlugin;
use bevy_ik::prelude::*;
use transform_gizmo_bevy::{GizmoMode, GizmoOptions, GizmoOrientation, TransformGizmoPlugin};

use crate::behaviours::BehavioursPlugin;
use crate::camera::CameraPlugin;
use crate::character::{CharacterPath, CharacterPlugin, DEFAULT_CHARACTER};
use crate::grounding::GroundingDemoPlugin;
use crate::handles::HandlesPlugin;
use crate::panel::PanelPlugin;
use crate::readouts::{ReadoutsPlugin, RunSummary};
use crate::screenshot::{CLEAR, KeysPlugin, ScreenshotPlugin};
use crate::settings::{DemoSettings, SettingsPlugin, load_settings};
use crate::solver::{SolverPlugin, SolverUi};
use crate::stack::StackPlugin;

const USAGE: &str = "usage: demo [CHARACTER | --character FILE.glb|FILE.gltf|FILE.vrm] [--screenshot PATH [--frames N]] [--solver full-body|rig|limbs [--switch-from full-body|rig|limbs]] [--settings FILE.ron] [--yaw DEGREES] [--terrain] [--walk] [--vr] [--creature] [--msaa 1|2|4|8] [--window WIDTHxHEIGHT]";

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("demo: {e}\n{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let mut settings = match &options.settings {
        None => DemoSettings::default(),
        Some(path) => match load_settings(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("demo: cannot load settings: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    if let Some(solver) = options.solver {
        settings.solver = solver;
    }
    // `--switch-from`: start in that mode; the screenshot run switches to the chosen one in
    // place once the character is solving.
    let switch_to = options.switch_from.map(|from| {
        let to = settings.solver;
        settings.solver = from;
        to
    });
    settings.scripted_motion |= options.screenshot.is_some();
    let character = options.character.as_deref().map_or_else(
        || CharacterPath::Asset(DEFAULT_CHARACTER.to_owned()),
        CharacterPath::from_argument,
    );
    if !character.is_supported() {
        eprintln!(
            "demo: {} is not a .glb, .gltf or .vrm file",
            character.display()
        );
        return ExitCode::FAILURE;
    }
    let asset_folder = asset_folder();
    let outcome = Arc::new(Mutex::new(None));
    let summary = Arc::new(Mutex::new(RunSummary::default()));
    let mut app = App::new();
    app.insert_resource(ClearColor(Color::srgb_u8(CLEAR[0], CLEAR[1], CLEAR[2])))
        .insert_resource(GlobalAmbientLight {
            color: Color::srgb(0.85, 0.9, 1.0),
            brightness: 350.0,
            ..default()
        })
        .add_plugins(
            DefaultPlugins
                .set(WindowPlugin {
                    primary_window: Some(Window {
                        title: "bevy_ik demo".into(),
                        resolution: WindowResolution::new(options.window.0, options.window.1),
                        ..default()
                    }),
                    ..default()
                })
                .set(AssetPlugin {
                    file_path: asset_folder.clone(),
                    // A viewer of files the user picks (no scripts or mods): a character from
                    // anywhere on disk, and the textures a `.gltf` there refers to, may load.
                    unapproved_path_mode: UnapprovedPathMode::Allow,
                    ..default()
                }),
        )
        .add_plugins((
            IkPlugin::default(),
            EguiPlugin::default(),
            TransformGizmoPlugin,
        ))
        .insert_resource(GizmoOptions {
            gizmo_modes: GizmoMode::all_translate(),
            gizmo_orientation: GizmoOrientation::Global,
            hotkeys: None,
            group_targets: false,
            ..default()
        })
        .add_plugins((
            SettingsPlugin { initial: settings },
            CharacterPlugin {
                initial: character,
                asset_folder: PathBuf::from(&asset_folder),
                hide_props: options.screenshot.is_some(),
            },
            SolverPlugin,
            StackPlugin,
            HandlesPlugin,
            CameraPlugin {
                yaw: options.yaw,
                msaa: options.msaa,
            },
            PanelPlugin,
            KeysPlugin,
            ReadoutsPlugin {
                summary: summary.clone(),
            },
            BehavioursPlugin,
            vr::VrModePlugin {
                enabled: options.vr,
            },
        ))
        .add_plugins(GroundingDemoPlugin {
            // The creature's legs need the terrain's ground.
            initial: options.terrain || options.creature,
            walk: options.walk,
        });
    if options.creature {
        app.add_plugins(creature::CreatureDemoPlugin);
    }
    if let Some(path) = &options.screenshot {
        app.add_plugins(ScreenshotPlugin {
            path: path.clone(),
            frames: options.frames,
            switch_to,
            outcome: outcome.clone(),
        });
    }
    let exit = app.run();
    let result = outcome.lock().map(|o| o.clone()).unwrap_or(None);
    if let Ok(mut summary) = summary.lock() {
        if let (Some(path), Some(Ok(_))) = (&options.screenshot, &result) {
            summary.screenshot = Some(path.display().to_string());
        }
        if let Some(Err(e)) = &result {
            summary.error = Some(e.clone());
        }
        println!("{}", summary.line());
    }
    match (options.screenshot, result, exit) {
        (Some(_), Some(Ok(message)), _) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        (Some(_), Some(Err(message)), _) => {
            eprintln!("demo: {message}");
            ExitCode::FAILURE
        }
        (Some(_), None, _) => {
            eprintln!("demo: the window closed before the screenshot was taken");
            ExitCode::FAILURE
        }
        (None, _, AppExit::Success) => ExitCode::SUCCESS,
        (None, _, AppExit::Error(_)) => ExitCode::FAILURE,
    }
}

/// The asset folder: Bevy's default (`assets` under `BEVY_ASSET_ROOT`, `CARGO_MANIFEST_DIR` or
/// the executable's folder), except when the binary is run directly from the build folder, where
/// the repository's `assets` (known at compile time) is used if it still exists.
fn asset_folder() -> String {
    let repository = concat!(env!("CARGO_MANIFEST_DIR"), "/assets");
    let env_root = std::env::var_os("BEVY_ASSET_ROOT")
        .or_else(|| std::env::var_os("CARGO_MANIFEST_DIR"))
        .map(PathBuf::from);
    match env_root {
        Some(root) => root.join("assets").display().to_string(),
        None if Path::new(repository).join(DEFAULT_CHARACTER).is_file() => repository.to_owned(),
        None => std::env::current_exe()
            .ok()
            .and_then(|exe| Some(exe.parent()?.join("assets")))
            .map_or_else(|| "assets".to_owned(), |p| p.display().to_string()),
    }
}

/// Command-line options.
#[derive(Clone, Debug, Default, PartialEq)]
struct Options {
    /// The character to open (a file, or a name in the asset folder).
    character: Option<String>,
    /// Save a screenshot here and exit.
    screenshot: Option<PathBuf>,
    /// Least number of frames to run after the character is set up before the screenshot.
    frames: u32,
    /// Start with this solver.
    solver: Option<SolverUi>,
    /// Start in this mode and switch to the chosen one in place during the screenshot run.
    switch_from: Option<SolverUi>,
    /// Start with the camera at this yaw (degrees, 0 = in front of the character).
    yaw: Option<f32>,
    /// Start with the panel settings saved in this RON file.
    settings: Option<PathBuf>,
    /// Start in the terrain mode (foot grounding on slopes and a stair).
    terrain: bool,
    /// Start walking across the terrain mode's course (the character's walk clip).
    walk: bool,
    /// Start in VR mode (head and hand handles are the trackers of a VR body).
    vr: bool,
    /// Add the procedural quadruped beside the character (and the terrain it walks on).
    creature: bool,
    /// Multisample anti-aliasing of the 3D view: samples per pixel (1 = off).
    msaa: Msaa,
    /// The window's size in logical pixels (`--window WIDTHxHEIGHT`).
    window: (u32, u32),
}

/// The window's size unless `--window` says otherwise (logical pixels).
const WINDOW: (u32, u32) = (1280, 720);
/// The smallest window `--window` accepts: the panel (330 logical pixels wide) and a view beside it.
const MIN_WINDOW: (u32, u32) = (640, 360);

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let mut options = Self {
            frames: 60,
            msaa: Msaa::Sample4,
            window: WINDOW,
            ..Self::default()
        };
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--vr" => options.vr = true,
                "--creature" => options.creature = true,
                "--screenshot" => {
                    let path = args.next().ok_or("--screenshot needs a path")?;
                    options.screenshot = Some(PathBuf::from(path));
                }
                "--frames" => {
                    let n = args.next().ok_or("--frames needs a number")?;
                    options.frames = n.parse().map_err(|_| format!("bad frame count `{n}`"))?;
                }
                "--solver" => {
                    let name = args.next();
                    options.solver = Some(
                        name.as_deref()
                            .and_then(SolverUi::from_name)
                            .ok_or_else(|| {
                                format!("--solver takes full-body, rig or limbs, not {name:?}")
                            })?,
                    );
                }
                "--switch-from" => {
                    let name = args.next();
                    options.switch_from = Some(
                        name.as_deref()
                            .and_then(SolverUi::from_name)
                            .ok_or_else(|| {
                                format!("--switch-from takes full-body, rig or limbs, not {name:?}")
                            })?,
                    );
                }
                "--settings" => {
                    let path = args.next().ok_or("--settings needs a path")?;
                    options.settings = Some(PathBuf::from(path));
                }
                "--msaa" => {
                    let n = args.next().ok_or("--msaa needs 1, 2, 4 or 8")?;
                    options.msaa = match n.as_str() {
                        "1" => Msaa::Off,
                        "2" => Msaa::Sample2,
                        "4" => Msaa::Sample4,
                        "8" => Msaa::Sample8,
                        _ => return Err(format!("--msaa takes 1, 2, 4 or 8, not `{n}`")),
                    };
                }
                "--window" => {
                    let size = args.next().ok_or("--window needs WIDTHxHEIGHT")?;
                    options.window = parse_window(&size)?;
                }
                "--terrain" => options.terrain = true,
                "--walk" => options.walk = true,
                "--yaw" => {
                    let n = args.next().ok_or("--yaw needs degrees")?;
                    let yaw: f32 = n.parse().map_err(|_| format!("bad yaw `{n}`"))?;
                    if !yaw.is_finite() {
                        return Err(format!("bad yaw `{n}`"));
                    }
                    options.yaw = Some(yaw);
                }
                "--character" => {
                    let path = args.next().ok_or("--character needs a path")?;
                    options.set_character(path)?;
                }
                other if other.starts_with('-') => {
                    return Err(format!("unknown argument `{other}`"));
                }
                _ => options.set_character(arg)?,
            }
        }
        if options.switch_from.is_some() && options.screenshot.is_none() {
            return Err("--switch-from is part of a --screenshot run".to_owned());
        }
        Ok(options)
    }

    fn set_character(&mut self, path: String) -> Result<(), String> {
        if let Some(first) = &self.character {
            return Err(format!("two characters given: `{first}` and `{path}`"));
        }
        self.character = Some(path);
        Ok(())
    }
}

/// `WIDTHxHEIGHT` in logical pixels, at least [`MIN_WINDOW`].
fn parse_window(size: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!(
            "--window takes WIDTHxHEIGHT of at least {}x{}, not `{size}`",
            MIN_WINDOW.0, MIN_WINDOW.1
        )
    };
    let (w, h) = size.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (w.parse().map_err(|_| bad())?, h.parse().map_err(|_| bad())?);
    if w < MIN_WINDOW.0 || h < MIN_WINDOW.1 {
        return Err(bad());
    }
    Ok((w, h))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> impl Iterator<Item = String> {
        list.iter()
            .map(|s| (*s).to_owned())
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn command_line_is_parsed_and_bad_input_rejected() {
        let o = Options::parse(args(&[
            "--screenshot",
            "shot.png",
            "--frames",
            "12",
            "--solver",
            "limbs",
            "--switch-from",
            "rig",
            "--yaw",
            "-30",
            "--character",
            "robot.glb",
            "--creature",
            "--msaa",
            "1",
            "--window",
            "800x450",
        ]))
        .expect("valid arguments");
        assert_eq!(o.screenshot, Some(PathBuf::from("shot.png")));
        assert_eq!(o.frames, 12);
        assert_eq!(o.solver, Some(SolverUi::Limbs));
        assert_eq!(o.switch_from, Some(SolverUi::Rig));
        assert_eq!(o.yaw, Some(-30.0));
        assert_eq!(o.character.as_deref(), Some("robot.glb"));
        assert!(o.creature);
        assert_eq!(o.msaa, Msaa::Off);
        assert_eq!(o.window, (800, 450));
        let positional = Options::parse(args(&["my model.gltf"])).expect("a positional path");
        assert_eq!(positional.character.as_deref(), Some("my model.gltf"));
        assert_eq!(positional.frames, 60);
        assert!(!positional.creature);
        assert_eq!(positional.msaa, Msaa::Sample4);
        assert_eq!(positional.window, WINDOW);
        assert!(Options::parse(args(&["--msaa", "3"])).is_err());
        assert!(Options::parse(args(&["--window", "800"])).is_err());
        assert!(Options::parse(args(&["--window", "100x100"])).is_err());
        assert!(Options::parse(args(&["--window", "wide x tall"])).is_err());
        assert!(Options::parse(args(&["a.glb", "--character", "b.glb"])).is_err());
        assert!(Options::parse(args(&["--character"])).is_err());
        assert!(Options::parse(args(&["--frames", "many"])).is_err());
        assert!(Options::parse(args(&["--yaw", "NaN"])).is_err());
        assert!(Options::parse(args(&["--solver", "fabrik"])).is_err());
        assert!(
            Options::parse(args(&["--switch-from", "limbs"])).is_err(),
            "needs --screenshot"
        );
        assert!(Options::parse(args(&["--screenshot", "a.png", "--switch-from", "x"])).is_err());
        assert!(Options::parse(args(&["--screenshot"])).is_err());
        assert!(Options::parse(args(&["--fullscreen"])).is_err());
    }
}
