"""The HTTP API and the live stream as Quart blueprints, one module per resource; ``service.app``
assembles them behind the perimeter."""
