"""Home control understanding: the Home Assistant intent set served without torch or hassil
(``model.HomeModel``), built from the pinned templates in seconds (``build``)."""
