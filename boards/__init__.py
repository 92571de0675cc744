"""Board profiles (one JSON file each), installed as ``ember.boards``; ``ember.accel.deploy``
reads them. See README.md here for what each field means and where each fact comes from."""
