"""The shared server's rules: who owns a run, which folders may load, what a link may say."""
