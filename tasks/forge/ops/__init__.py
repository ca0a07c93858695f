"""The forge's operations, one mixin class per category (or pair of adjacent categories).

``backend.ForgeBackend`` composes them; ``base.ForgeBase`` holds the store and the lookups they share.
"""
