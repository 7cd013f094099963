//! TODO(jacobian): being written.
