import MemPressureOneShot

// The quickest one-shot lines here, everything else in mempressure-commands (`OneShot`).
OneShot.main()
