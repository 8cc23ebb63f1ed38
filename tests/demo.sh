#!/bin/sh
# The demo: filled in as programs land.
echo "sixi demo: nothing to demo yet"
