// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

interface IERC721Transfer {
    function transferFrom(address from, address to, uint256 tokenId) external;
}

interface IERC20TransferFrom {
    function transferFrom(address from, address to, uint256 value) external returns (bool);
}

/// A marketplace for end-to-end tests: the NFT moves from the seller to the buyer and the buyer pays the seller,
/// in ether or in an ERC-20, in the same transaction. The seller approves the market for the NFT beforehand
/// (setApprovalForAll), the buyer for the ERC-20 (approve).
contract TestMarket {
    function buy(address nft, uint256 tokenId, address payable seller) external payable {
        IERC721Transfer(nft).transferFrom(seller, msg.sender, tokenId);
        (bool ok,) = seller.call{value: msg.value}("");
        require(ok, "TestMarket: payment failed");
    }

    function buyWith(address nft, uint256 tokenId, address seller, address token, uint256 price) external {
        require(IERC20TransferFrom(token).transferFrom(msg.sender, seller, price), "TestMarket: payment failed");
        IERC721Transfer(nft).transferFrom(seller, msg.sender, tokenId);
    }
}
