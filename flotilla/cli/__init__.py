"""flotillactl: use and inspect Flotilla."""
