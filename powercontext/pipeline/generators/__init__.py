"""Pipeline generators that live in their own modules (imported lazily by the registry)."""
