"""Running the bridge on one machine: moto's server, the template's resources, the poller."""
