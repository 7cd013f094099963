pub use crate::config::{GizmoConfig, GizmoDirection, GizmoMode, GizmoOrientation, GizmoVisuals};
pub use crate::gizmo::{Gizmo, GizmoDrawData, GizmoInteraction, GizmoResult};

pub use enumset::{EnumSet, enum_set};

pub use mint;

pub use ecolor::Color32;
pub use emath::Rect;
