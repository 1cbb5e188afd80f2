//! Index newtypes: a node, an egress port (one direction of a link), a
//! full-duplex link, a packet in the slab.

macro_rules! id {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub u32);
        impl $name {
            #[inline]
            pub fn idx(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id!(
    /// A host or a switch.
    NodeId
);
id!(
    /// An egress port: the sending side of one direction of a link.
    PortId
);
id!(
    /// A full-duplex link: two ports facing each other.
    LinkId
);
id!(
    /// A packet's index in the packet slab.
    PktId
);
