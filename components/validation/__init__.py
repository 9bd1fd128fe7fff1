"""Statistics, schema and validation: the curated schema with the bounds the settings give
(`schema.ConfiguredSchema`) and the gate on the ExampleValidator's anomalies (`schema.AnomaliesGate`)."""
