"""The lab's scenarios, one system of the schema-design texts a module."""
