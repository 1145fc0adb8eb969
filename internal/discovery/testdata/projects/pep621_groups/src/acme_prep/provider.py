class PreparationProvider: pass
