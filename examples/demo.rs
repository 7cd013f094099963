//! Temporary: prewarm.
fn main() {
    let _ = bevy::app::App::new();
    let _ = transform_gizmo_bevy::TransformGizmoPlugin;
    let _ = bevy_egui::EguiPlugin::default();
}
