"""Knowledge-base models arrive with the KB issue; the app exists so the layout is fixed from the start."""
