//! The error types of every module in one place: each module owns one `#[non_exhaustive]`
//! enum; this module re-exports them so `ik_core::SkeletonError` etc. work.
//!
//! Errors are only for malformed setup or non-finite input. An unreachable target or a solve
//! that did not converge is *status* in a solver's report, never an error.

pub use crate::analytic::AnalyticError;
pub use crate::humanoid::HumanoidError;
pub use crate::jacobian::JacobianError;
pub use crate::limits::LimitError;
pub use crate::rotation::RotationError;
pub use crate::skeleton::SkeletonError;
pub use crate::stack::StackError;
