//! TODO(analytic): being written.
