"""A src-layout provider that keeps a skills catalog per Agent and delivers a settings file."""
