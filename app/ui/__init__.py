"""The Qt face of the app: thin widgets over app.controller (no speech logic lives here)."""
