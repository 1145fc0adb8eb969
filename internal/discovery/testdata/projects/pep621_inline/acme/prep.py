class Provider:
    class Inner: pass
