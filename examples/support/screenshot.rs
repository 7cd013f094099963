//! `--screenshot PATH [--after SECONDS]` for the small windowed examples (`creature`,
//! `spring`): save one frame after that many seconds (default 2; a software renderer compiling
//! its pipelines needs longer), then quit. The demo has its own, checked screenshot driver.

use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, save_to_disk};

/// Reads the two options from the command line and adds the system that takes the frame.
pub struct ScreenshotOption;

impl Plugin for ScreenshotOption {
    fn build(&self, app: &mut App) {
        let arg = |name: &str| std::env::args().skip_while(|a| a != name).nth(1);
        app.insert_resource(ScreenshotPath(
            arg("--screenshot"),
            arg("--after").and_then(|s| s.parse().ok()).unwrap_or(2.0),
        ))
        .add_systems(Update, take_screenshot);
    }
}

/// The path to save to, if any, and after how many seconds.
#[derive(Resource)]
struct ScreenshotPath(Option<String>, f32);

/// A frame after `--after` seconds, then quit once the file is written.
fn take_screenshot(
    mut commands: Commands,
    path: Res<ScreenshotPath>,
    time: Res<Time>,
    mut state: Local<u32>,
    mut exit: MessageWriter<AppExit>,
) {
    let after = path.1;
    let Some(path) = &path.0 else { return };
    if *state == 0 && time.elapsed_secs() > after {
        commands
            .spawn(Screenshot::primary_window())
            .observe(save_to_disk(path.clone()));
        *state = 1;
    } else if *state > 0 {
        *state += 1;
        if *state > 30 && std::path::Path::new(path).exists() {
            exit.write(AppExit::Success);
        }
    }
}
