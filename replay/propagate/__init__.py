"""The MigrationPropagator port: deltas in, the controller's sends out."""
